"""coload.select and coload.check: the report `coload select` prints, and
whether a path loads on a device."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fixture, needs

import coload

TWO_ARCH_REPORT = """device gfx90a
bundle 0: selected hipv4-amdgcn-amd-amdhsa--gfx90a (native)
  [0] rejected   -          host-x86_64-unknown-linux-gnu-: host entry
  [1] rejected   -          hipv4-amdgcn-amd-amdhsa--gfx1030: built for gfx1030; device is gfx90a
  [2] selected   native     hipv4-amdgcn-amd-amdhsa--gfx90a: native: runs in any feature mode
"""


def test_select_gives_the_entry_and_the_report() -> None:
    path = fixture("bundles/driver_two_arch.hipfb")
    selection = coload.select(path, "gfx90a", ignore_environment=True)
    assert selection.report == TWO_ARCH_REPORT
    chosen = selection.chosen
    assert (chosen.entry_index, chosen.entry_id, chosen.tier) == (2, "hipv4-amdgcn-amd-amdhsa--gfx90a", coload.Tier.NATIVE)
    assert chosen.file == str(path)
    assert chosen.offset is not None
    assert path.read_bytes()[chosen.offset : chosen.offset + len(chosen.code_object)] == chosen.code_object


def test_select_falls_back_to_the_generic_family() -> None:
    selection = coload.select(fixture("co/gfx11-generic.co"), "gfx1101", ignore_environment=True)
    assert selection.chosen.tier == coload.Tier.GENERIC
    assert selection.report.splitlines()[1] == "bundle 0: selected hipv4-amdgcn-amd-amdhsa--gfx11-generic (generic)"


def test_select_with_no_fit_raises_with_the_report() -> None:
    with pytest.raises(coload.NotFound) as caught:
        coload.select(fixture("bundles/driver_two_arch.hipfb"), "gfx1100", ignore_environment=True)
    assert caught.value.message.startswith("no code object fits device gfx1100")
    assert caught.value.report.splitlines()[1].startswith("bundle 0: nothing selected: no code object fits")
    assert "[2] rejected   -          hipv4-amdgcn-amd-amdhsa--gfx90a: built for gfx90a" in caught.value.report


def test_select_in_a_host_image_reports_every_bundle() -> None:
    selection = coload.select(fixture("host/libkernels_compressed.so"), "gfx90a", ignore_environment=True)
    assert [choice.chosen for choice in selection.choices] == [True, False, False]
    lines = selection.report.splitlines()
    assert lines[:2] == ["device gfx90a:sramecc+:xnack-", "bundle 0: selected hipv4-amdgcn-amd-amdhsa--gfx90a (native)"]
    assert lines[2].startswith("bundle 1: nothing selected: ")


def test_select_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        coload.select(tmp_path / "missing.hipfb", "gfx90a")
    corrupt = tmp_path / "corrupt.co"
    corrupt.write_bytes(b"\x7fELF" + bytes(60))
    with pytest.raises(coload.Malformed):
        coload.select(corrupt, "gfx90a")
    with pytest.raises(coload.InvalidArgument):
        coload.select(fixture("co/gfx90a.co"), "gfx9999")
    with pytest.raises(ValueError, match="hash_check"):
        coload.select(fixture("co/gfx90a.co"), "gfx90a", hash_check="always")  # type: ignore[arg-type]


def test_check(tmp_path: Path) -> None:
    coload.check(fixture("bundles/driver_two_arch.hipfb"), "gfx90a", ignore_environment=True)
    coload.check(fixture("co/gfx11-generic.co"), "gfx1151", ignore_environment=True)
    with pytest.raises(coload.NotFound, match="no code object fits device gfx906"):
        coload.check(fixture("bundles/driver_two_arch.hipfb"), "gfx906", ignore_environment=True)
    with pytest.raises(coload.Io):
        coload.check(tmp_path / "missing.co", "gfx90a")
    half = tmp_path / "half.co"
    code_object = fixture("co/gfx90a.co").read_bytes()
    half.write_bytes(code_object[: len(code_object) // 2])
    with pytest.raises(coload.OutOfBounds):
        coload.check(half, "gfx90a", ignore_environment=True)


def test_check_with_a_runtime_without_a_gpu() -> None:
    # No machine this has run on has an AMD GPU (docs/loading.md, "What ran
    # where"): the runtime's refusal (or, with no ROCr, the library's
    # absence) arrives as a coload.Error; with a GPU, a gfx90a one loads it.
    try:
        coload.check(fixture("co/gfx90a.co"), "gfx90a", runtime="hsa")
    except coload.Error as error:
        assert error.status is not None and error.message


@needs("coload_register_directory")
def test_select_in_a_folder_names_the_files(tmp_path: Path) -> None:
    for arch in ("gfx90a", "gfx11-generic"):
        (tmp_path / arch).mkdir()
        (tmp_path / arch / "vector_ops.co").write_bytes(fixture(f"co/{arch}.co").read_bytes())
    selection = coload.select(tmp_path, "gfx1101", ignore_environment=True)
    chosen = selection.chosen
    assert chosen.tier == coload.Tier.GENERIC
    if chosen.file is not None:  # the library's coload_choice names it
        assert chosen.file.endswith("gfx11-generic/vector_ops.co")
        assert f"from {chosen.file}" in selection.report
