"""``coload.kpack_archive``, ``coload.kpack_extract`` and ``coload.select`` on
a kpack archive (docs/python.md), on the kpack'd fixtures
(docs/fixtures.md, "kpack'd host images"): the listing field by field as
``coload ls --json`` prints it, each code object as ``coload extract
--target --bundle`` writes it, and the errors with their location."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import BUILD_DIR, needs

import coload

HIPK_DIR = Path(os.environ.get("COLOAD_HIPK_FIXTURE_DIR", BUILD_DIR / "hipk_fixtures"))
CLI = BUILD_DIR / "tools" / "coload" / "coload"
SCHEMES = ("none", "zstd-per-kernel")
LIBRARY = "consistent/lib/libconsistent.so"
pytestmark = needs("coload_kpack_list")


def archive(scheme: str) -> Path:
    path = HIPK_DIR / scheme / "consistent" / ".kpack" / "consistent_gfx942.kpack"
    if not path.exists():
        pytest.fail(f"missing fixture {path}: build the coload_hipk_fixtures target")
    return path


def cli() -> Path:
    if not CLI.exists():
        pytest.skip(f"no {CLI}: build the coload_cli target")
    return CLI


@pytest.mark.parametrize("scheme", SCHEMES)
def test_listing_is_coload_ls(scheme: str) -> None:
    path = archive(scheme)
    listed = coload.kpack_archive(path)
    shown = json.loads(subprocess.run([cli(), "ls", "--json", path], check=True, capture_output=True).stdout)
    assert listed.path == str(path)
    assert (listed.scheme, listed.group, listed.gfx_arch_family) == (
        shown["scheme"],
        shown["group"],
        shown["gfx_arch_family"],
    )
    assert listed.gfx_arches == tuple(shown["gfx_arches"]) == ("gfx942",)
    assert listed.code_objects == shown["code_objects"] == 6
    expected = []
    for bundle in shown["bundles"]:
        for entry in bundle["entries"]:
            index = bundle["code_object_index"]
            expected.append(
                coload.KpackEntry(
                    bundle=bundle["index"],
                    key=bundle["key"],
                    binary=bundle["binary"],
                    index=None if index == "none" else int(index),
                    target=entry["target"],
                    entry_id=entry["id"],
                    ordinal=entry["ordinal"],
                    original_size=entry["size"],
                    stored_offset=entry["offset"],
                    stored_size=entry["stored_size"],
                )
            )
    assert listed.entries == tuple(expected)
    assert [entry.key for entry in listed.entries[:3]] == [f"{LIBRARY}#{n}" for n in range(3)]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_extract_is_coload_extract(scheme: str, tmp_path: Path) -> None:
    path = archive(scheme)
    for entry in coload.kpack_archive(path).entries:
        out = tmp_path / f"{entry.bundle}.co"
        subprocess.run(
            [cli(), "extract", "--target", "gfx942", "--bundle", str(entry.bundle), "-o", out, path],
            check=True,
            capture_output=True,
        )
        code_object = coload.kpack_extract(path, entry.key, entry.target)
        assert code_object == out.read_bytes()
        assert len(code_object) == entry.original_size
        assert code_object[:4] == b"\x7fELF"
    # Both schemes hold the same code objects.
    key = f"{LIBRARY}#2"
    assert coload.kpack_extract(archive("none"), key, "gfx942") == coload.kpack_extract(
        archive("zstd-per-kernel"), key, "gfx942"
    )


def test_missing_key_or_target_is_not_found() -> None:
    path = archive("zstd-per-kernel")
    with pytest.raises(coload.NotFound) as missing:
        coload.kpack_extract(path, f"{LIBRARY}#9", "gfx942")
    assert missing.value.field == "key"
    assert missing.value.file == str(path)
    assert f"{LIBRARY}#9" in missing.value.message
    with pytest.raises(coload.NotFound) as other:
        coload.kpack_extract(path, f"{LIBRARY}#0", "gfx90a")
    assert other.value.field == "target"
    assert other.value.bundle == 0
    assert "targets: gfx942" in other.value.message
    with pytest.raises(ValueError):
        coload.kpack_extract(path, "a\0b", "gfx942")


def test_broken_or_other_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.kpack"
    data = bytearray(archive("none").read_bytes())
    data[4:8] = (2).to_bytes(4, "little")  # the header's version
    broken.write_bytes(bytes(data))
    with pytest.raises(coload.UnsupportedVersion) as listed:
        coload.kpack_archive(broken)
    assert (listed.value.field, listed.value.value, listed.value.file) == ("version", 2, str(broken))
    with pytest.raises(coload.UnsupportedVersion):
        coload.kpack_extract(broken, f"{LIBRARY}#0", "gfx942")
    with pytest.raises(coload.BadMagic) as other:
        coload.kpack_archive(HIPK_DIR / "orig" / LIBRARY)
    assert "no kpack archive" in other.value.message
    with pytest.raises(coload.Io):
        coload.kpack_archive(tmp_path / "absent.kpack")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_select_on_an_archive(scheme: str, tmp_path: Path) -> None:
    path = archive(scheme)
    # A copy under another name: select looks at the bytes, not the suffix.
    copy = tmp_path / "archive.bin"
    shutil.copyfile(path, copy)
    for where in (path, copy):
        selection = coload.select(where, "gfx942")
        entries = coload.kpack_archive(where).entries
        assert [choice.bundle for choice in selection.choices] == [entry.bundle for entry in entries]
        for choice, entry in zip(selection.choices, entries):
            assert choice.chosen
            assert choice.entry_id == entry.entry_id
            assert choice.code_object == coload.kpack_extract(where, entry.key, "gfx942")
        assert "bundle 0: selected hipv4-amdgcn-amd-amdhsa--gfx942 (native)" in selection.report
    with pytest.raises(coload.NotFound) as nothing:
        coload.select(path, "gfx90a")
    assert "gfx942" in nothing.value.message


@pytest.mark.parametrize("scheme", SCHEMES)
def test_kpack_root_finds_a_moved_images_archives(scheme: str, tmp_path: Path) -> None:
    image = HIPK_DIR / scheme / LIBRARY
    moved = tmp_path / "libconsistent.so"  # away from its ../.kpack
    shutil.copyfile(image, moved)
    with pytest.raises(coload.NotFound) as lost:
        coload.select(moved, "gfx942", ignore_environment=True)
    assert "no kpack archive found" in lost.value.message
    rooted = coload.select(moved, "gfx942", ignore_environment=True, kpack_root=image.parent)
    original = coload.select(HIPK_DIR / "orig" / LIBRARY, "gfx942", ignore_environment=True)
    assert [c.code_object for c in rooted.choices] == [c.code_object for c in original.choices]
    assert all(choice.chosen for choice in rooted.choices)
