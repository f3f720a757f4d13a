"""Finding libcoload.so.0, the version, the status names, and the ctypes
structs against the C compiler's layout of coload.h."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUILD_DIR, SOURCE_DIR

import coload
from coload import _library


def run_python(code: str, **environment: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "COLOAD_LIBRARY"}
    env.update(environment)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)


def test_version_is_the_headers() -> None:
    header = (BUILD_DIR / "include/coload/version.h").read_text()
    expected = re.search(r'#define COLOAD_VERSION_STRING "([0-9.]+)"', header)
    assert expected is not None
    assert coload.version() == expected.group(1)


def test_the_build_tree_package_finds_the_builds_library() -> None:
    staged = BUILD_DIR / "python"
    if not (staged / "coload/_paths.py").exists():
        pytest.skip(f"{staged} is not the build's staged package")
    result = run_python("import coload; print(coload.library_path()); print(coload.version())", PYTHONPATH=str(staged))
    assert result.returncode == 0, result.stderr
    path, version = result.stdout.split()
    assert Path(path) == BUILD_DIR / "src/libcoload.so.0"
    assert version == coload.version()


def test_coload_library_overrides_and_import_needs_no_library(tmp_path: Path) -> None:
    missing = tmp_path / "libcoload.so.0"
    code = "import coload\ntry:\n  coload.version()\nexcept coload.LibraryNotFound as e:\n  print(e.status, e)"
    result = run_python(code, COLOAD_LIBRARY=str(missing), PYTHONPATH=os.pathsep.join(sys.path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"None library: cannot open {missing}: ")
    assert "set COLOAD_LIBRARY to the path of libcoload.so.0" in result.stdout


def test_status_names_are_the_librarys() -> None:
    status_string = _library.function("coload_status_string")
    for status in coload.Status:
        assert status_string(status).decode() == status.name.lower()
    assert status_string(99).decode() == "unknown_status"
    error = coload.errors.error_for(99, "from a newer library", "unknown_status")
    assert type(error) is coload.Error and error.status == 99
    assert str(error) == "unknown_status: from a newer library"


def test_a_missing_function_is_library_too_old() -> None:
    _library.PROTOTYPES.setdefault("coload_not_a_function", (ctypes.c_int, []))
    with pytest.raises(coload.LibraryTooOld, match="has no coload_not_a_function"):
        _library.function("coload_not_a_function")
    assert not coload.has_function("coload_not_a_function")
    assert coload.has_function("coload_lookup_kernel")


# The structs as ctypes lays them out, against the C compiler's offsets.
LAYOUT_PROGRAM = """
#include <stddef.h>
#include <stdio.h>
#include "coload/coload.h"
#define FIELD(s, f) printf(#s " " #f " %zu\\n", offsetof(s, f));
int main(void) {
%s
  return 0;
}
"""


def test_structs_match_the_c_layout(tmp_path: Path) -> None:
    compiler = os.environ.get("COLOAD_TEST_CC") or shutil.which("cc")
    if not compiler:
        pytest.skip("no C compiler to lay the structs out")
    structs = {
        "coload_registry_options": _library.RegistryOptions,
        "coload_kernel_info": _library.KernelInfo,
        "coload_select_options": _library.SelectOptions,
        "coload_selected": _library.Selected,
        "coload_selection": _library.Selection,
        "coload_choice": _library.Choice,
    }
    if coload.has_function("coload_last_error_location"):
        structs["coload_error_location"] = _library.ErrorLocation
    if coload.has_function("coload_kpack_list"):
        structs["coload_kpack_entry"] = _library.KpackEntry
        structs["coload_kpack_listing"] = _library.KpackListing
        structs["coload_kpack_object"] = _library.KpackObject
    expected = []
    lines = []
    for c_name, struct in structs.items():
        for field, *_ in struct._fields_:
            if c_name == "coload_choice" and field == "file" and not coload.has_function("coload_register_files"):
                continue  # a member the header gains with coload_register_files
            lines.append(f"  FIELD({c_name}, {field})")
            expected.append(f"{c_name} {field} {getattr(struct, field).offset}")
        lines.append(f'  printf("{c_name} sizeof %zu\\n", sizeof({c_name}));')
        size = ctypes.sizeof(struct)
        if c_name == "coload_choice" and not coload.has_function("coload_register_files"):
            size = _library.Choice.file.offset
        expected.append(f"{c_name} sizeof {size}")
    source = tmp_path / "layout.c"
    source.write_text(LAYOUT_PROGRAM.replace("%s", "\n".join(lines)))
    includes = [f"-I{SOURCE_DIR / 'include'}", f"-I{BUILD_DIR / 'include'}"]
    subprocess.run([compiler, *includes, "-o", str(tmp_path / "layout"), str(source)], check=True)
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout
    assert printed.splitlines() == expected
