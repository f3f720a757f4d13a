"""register_files and register_directory: a set of files is one fat binary
(issue 26). Skipped with a library that lacks them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SAXPY, fixture, needs

import coload


def per_arch_folder(root: Path) -> Path:
    """hsa/<arch>/vector_ops.co for gfx90a, gfx942 and gfx11-generic."""
    for arch in ("gfx90a", "gfx942", "gfx11-generic"):
        (root / "hsa" / arch).mkdir(parents=True)
        (root / "hsa" / arch / "vector_ops.co").write_bytes(fixture(f"co/{arch}.co").read_bytes())
    return root / "hsa"


@needs("coload_register_directory")
def test_register_directory_chooses_per_device(tmp_path: Path) -> None:
    folder = per_arch_folder(tmp_path)
    with coload.Registry(runtime="dry-run", devices="gfx942,gfx1101,gfx906", ignore_environment=True) as registry:
        binary = registry.register_directory(folder, "*.co", recursive=True)
        assert registry.lookup_kernel(binary, 0, SAXPY).explicit_kernarg_size == 28
        assert registry.lookup_kernel(binary, 1, SAXPY).kernarg_segment_size == 288
        with pytest.raises(coload.NotFound):
            registry.load(binary, 2)
        files = {choice.file for choice in registry.choose(binary, 1) if choice.chosen}
        assert files <= {None, str(folder / "gfx11-generic" / "vector_ops.co")}


@needs("coload_register_directory")
def test_register_directory_missing_folder() -> None:
    with coload.Registry(runtime="dry-run", devices="gfx942", ignore_environment=True) as registry:
        with pytest.raises(coload.Io):
            registry.register_directory("/nonexistent-folder")


@needs("coload_register_files")
def test_register_files_and_duplicates(tmp_path: Path) -> None:
    folder = per_arch_folder(tmp_path)
    paths = [folder / "gfx90a" / "vector_ops.co", folder / "gfx942" / "vector_ops.co"]
    with coload.Registry(runtime="dry-run", devices="gfx90a,gfx942", ignore_environment=True) as registry:
        binary = registry.register_files(paths)
        assert registry.lookup_kernel(binary, 1, SAXPY).kernarg_segment_size == 288
        with pytest.raises(coload.Ambiguous) as caught:  # the same kernel twice for one target, at registration
            registry.register_files([paths[0], fixture("co/gfx90a.co")])
        assert str(paths[0]) in caught.value.message and "co/gfx90a.co" in caught.value.message
        assert 'kernel "_Z12scale_doublePddx" for target gfx90a is in both' in caught.value.message
        with pytest.raises(coload.Io):
            registry.register_files([tmp_path / "missing.co"])


def test_a_library_without_them_says_it_is_too_old() -> None:
    with coload.Registry(runtime="dry-run", devices="gfx942", ignore_environment=True) as registry:
        for name, call in (
            ("coload_register_directory", lambda: registry.register_directory(".")),
            ("coload_register_files", lambda: registry.register_files([])),
        ):
            if coload.has_function(name):
                continue
            with pytest.raises(coload.LibraryTooOld, match=f"has no {name}: a newer libcoload.so.0 is needed"):
                call()
