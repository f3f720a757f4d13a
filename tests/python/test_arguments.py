"""Integers and strings handed to C are checked first (docs/python.md,
"Arguments"): an integer outside its C type is OverflowError, not a value
that wraps; a string or path with an embedded NUL is ValueError, not one cut
at the NUL."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SAXPY, fixture, needs

import coload

WRAP64 = 2**64
NUL = "embedded null byte"


def test_a_handle_past_uint64_does_not_unregister_another(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("host/libkernels_compressed.so"))
    with pytest.raises(OverflowError, match="binary is 18446744073709551617"):
        registry.unregister(WRAP64 + binary.handle)
    with pytest.raises(OverflowError):
        registry.unregister(-1)
    assert registry.lookup_kernel(binary, 0, SAXPY).explicit_kernarg_size == 28  # still registered
    with pytest.raises(OverflowError):
        registry.load(WRAP64 + binary.handle, 0)


def test_dispatch_sizes_past_their_c_types_do_not_wrap(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("host/libkernels_compressed.so"))
    with pytest.raises(OverflowError, match="kernarg_bytes"):
        registry.check_dispatch(binary, 0, SAXPY, WRAP64 + 28)
    with pytest.raises(OverflowError, match="dynamic_lds"):
        registry.check_dispatch(binary, 0, SAXPY, 28, dynamic_lds=WRAP64)
    with pytest.raises(OverflowError, match=r"workgroup_size\[0\]"):
        registry.check_dispatch(binary, 0, SAXPY, 28, workgroup_size=(2**32 + 64, 1, 1))
    with pytest.raises(OverflowError, match="dynamic_lds"):
        registry.check_dispatch(binary, 0, SAXPY, 28, dynamic_lds=-1)
    with pytest.raises(ValueError, match="workgroup_size has 2 values"):
        registry.check_dispatch(binary, 0, SAXPY, 28, workgroup_size=(64, 1))  # type: ignore[arg-type]
    with pytest.raises(OverflowError, match="device"):
        registry.check_dispatch(binary, WRAP64, SAXPY, 28)
    with pytest.raises(TypeError, match="kernarg_bytes must be an int"):
        registry.check_dispatch(binary, 0, SAXPY, 28.0)  # type: ignore[arg-type]


def test_options_past_their_c_types_are_refused() -> None:
    with pytest.raises(OverflowError, match="Options.max_decompressed_bytes is -1"):
        coload.Registry(runtime="dry-run", devices="gfx90a", ignore_environment=True, max_decompressed_bytes=-1)
    with pytest.raises(OverflowError, match="Options.decode_threads"):
        coload.Registry(runtime="dry-run", devices="gfx90a", ignore_environment=True, decode_threads=2**32)
    with pytest.raises(OverflowError, match=r"Options.hsa_agents\[1\]"):
        coload.Registry(runtime="hsa", hsa_agents=[1, WRAP64])
    with pytest.raises(OverflowError, match=r"Options.hip_devices\[0\]"):
        coload.Registry(runtime="hip", hip_devices=[2**31])
    with pytest.raises(OverflowError, match="max_decompressed_bytes"):
        coload.select(fixture("bundles/driver_two_arch.hipfb"), "gfx90a", max_decompressed_bytes=-1)


def test_names_with_a_nul_are_refused_not_cut(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("host/libkernels_compressed.so"))
    with pytest.raises(ValueError, match=f"name: {NUL}"):
        registry.lookup_kernel(binary, 0, SAXPY + "\0tail")
    with pytest.raises(ValueError, match=f"name: {NUL}"):
        registry.lookup_global(binary, 0, "dev_counter\0x")
    with pytest.raises(ValueError, match=f"name: {NUL}"):
        registry.check_dispatch(binary, 0, SAXPY + "\0", 28)
    with pytest.raises(ValueError, match=f"name: {NUL}"):
        registry.register_memory(b"\0", "a\0b")
    with pytest.raises(ValueError, match=f"Options.devices: {NUL}"):
        coload.Registry(runtime="dry-run", devices="gfx90a\0gfx942")
    with pytest.raises(ValueError, match=f"device: {NUL}"):
        coload.select(fixture("bundles/driver_two_arch.hipfb"), "gfx90a\0")


def test_paths_and_patterns_with_a_nul_are_refused_not_cut(registry: coload.Registry) -> None:
    real = str(fixture("host/libkernels_compressed.so"))
    with pytest.raises(ValueError, match=f"path: {NUL}"):
        registry.register_file(real + "\0.ignored")
    with pytest.raises(ValueError, match=f"path: {NUL}"):
        coload.select(real + "\0", "gfx90a")
    with pytest.raises(ValueError, match=f"path: {NUL}"):
        coload.check(real + "\0", "gfx90a")


@needs("coload_register_directory")
def test_set_paths_and_patterns_with_a_nul_are_refused(registry: coload.Registry, tmp_path: Path) -> None:
    real = str(fixture("host/libkernels_compressed.so"))
    with pytest.raises(ValueError, match=rf"paths\[1\]: {NUL}"):
        registry.register_files([real, real + "\0x"])
    with pytest.raises(ValueError, match=f"path: {NUL}"):
        registry.register_directory(str(tmp_path) + "\0x")
    with pytest.raises(ValueError, match=f"pattern: {NUL}"):
        registry.register_directory(tmp_path, "*.co\0*")
