"""examples/python/kernel_registry.py on a per-architecture folder assembled
from the bare code objects of the fixtures (docs/fixtures.md): hsa/<arch>/*.co
for gfx90a, gfx942 and gfx11-generic (tests/kernels/vector_ops.hip) and gfx950
(tests/kernels/lds_heavy.hip's gemm_128x128, 96 KiB of static LDS)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAXPY, SOURCE_DIR, fixture, needs

EXAMPLE = SOURCE_DIR / "examples/python/kernel_registry.py"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    layout = {
        "gfx90a/vector_ops.co": "co/gfx90a.co",
        "gfx942/vector_ops.co": "co/gfx942.co",
        "gfx11-generic/vector_ops.co": "co/gfx11-generic.co",
        "gfx950/gemm_128x128.co": "check/lds_heavy-gfx950.co",
    }
    for member, source in layout.items():
        (tmp_path / "hsa" / member).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "hsa" / member).write_bytes(fixture(source).read_bytes())
    (tmp_path / "hsa" / "README.txt").write_text("not a code object: the *.co pattern leaves it out\n")
    return tmp_path / "hsa"


def example(*arguments: str | Path) -> tuple[int, str]:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--runtime", "dry-run", *map(str, arguments)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.stderr == ""
    return result.returncode, result.stdout


LOADS_SAXPY = """kernel: _Z5saxpyfPKfPfi
LDS: 0 static + 0 dynamic bytes
launch: 28 bytes of arguments (288-byte kernarg segment, align 8)
"""


@needs("coload_register_directory")
def test_native_and_generic_loads(folder: Path) -> None:
    assert example("--device", "gfx942", folder, SAXPY) == (0, "device: gfx942:sramecc+:xnack-\n" + LOADS_SAXPY)
    assert example("--device", "gfx1101", folder, SAXPY) == (0, "device: gfx1101\n" + LOADS_SAXPY)


@needs("coload_register_directory")
def test_static_plus_dynamic_lds_must_fit(folder: Path) -> None:
    head = "device: gfx950:sramecc+:xnack-\nkernel: gemm_128x128\n"
    assert example("--device", "gfx950", "--dynamic-lds", "65536", folder, "gemm_128x128") == (
        0,
        head + "LDS: 98304 static + 65536 dynamic bytes\n"
        "launch: 28 bytes of arguments (288-byte kernarg segment, align 8)\n",
    )
    assert example("--device", "gfx950", "--dynamic-lds", "65537", folder, "gemm_128x128") == (
        1,
        head + "LDS: 98304 static + 65537 dynamic bytes\n"
        'refused: limit_exceeded: kernel "gemm_128x128": group_segment_fixed_size 98304 + dynamic_lds 65537'
        " = 163841 bytes exceeds the 163840-byte LDS of gfx950\n",
    )


@needs("coload_register_directory")
def test_no_fit_and_unknown_kernels_are_refused(folder: Path) -> None:
    status, output = example("--device", "gfx906", folder, SAXPY)
    assert status == 1
    assert output.startswith("device: gfx906:sramecc+:xnack-\nrefused: not_found: ")
    assert "gfx906" in output.splitlines()[1]
    status, output = example("--device", "gfx942", folder, "gemm_128x128")
    assert status == 1
    assert output.startswith("device: gfx942:sramecc+:xnack-\nrefused: not_found: ")
    assert '"gemm_128x128"' in output


def test_a_bad_command_line() -> None:
    result = subprocess.run([sys.executable, str(EXAMPLE), "--device"], capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "usage: kernel_registry.py" in result.stderr
