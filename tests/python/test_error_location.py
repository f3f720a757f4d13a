"""coload.Error's location fields (file, bundle, bundle_offset, entry,
entry_id, field, offset, value, limit), read with coload_last_error_location
right after the failed call: real errors from the fixtures give their kind
and each field; what an error does not say, or a library without the call
cannot say, is None. Not skipped on a library without the call: the suite
runs against its own build's library, and these are what the build adds."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from conftest import fixture

import coload
from coload import _library

LOCATION_FIELDS = ("file", "bundle", "bundle_offset", "entry", "entry_id", "field", "offset", "value", "limit")

def location(error: coload.Error) -> dict[str, object]:
    return {name: getattr(error, name) for name in LOCATION_FIELDS}


def u64_at(data: bytes, offset: int) -> int:
    value: int = struct.unpack_from("<Q", data, offset)[0]
    return value


def test_a_truncated_bundle_names_its_field_value_and_limit(registry: coload.Registry, tmp_path: Path) -> None:
    cut = tmp_path / "cut.hipfb"
    cut.write_bytes(fixture("bundles/driver_two_arch.hipfb").read_bytes()[:56])
    with pytest.raises(coload.Truncated) as caught:
        registry.register_file(cut)
    assert caught.value.status == coload.Status.TRUNCATED
    assert location(caught.value) == {
        "file": str(cut),
        "bundle": 0,
        "bundle_offset": 0,
        "entry": None,
        "entry_id": None,
        "field": "num_entries",
        "offset": 0x18,
        "value": 3,
        "limit": 1,
    }


def test_max_decompressed_bytes_is_the_limit_of_uncompressed_size() -> None:
    path = fixture("compressed/driver_v3.hipfb")
    data = path.read_bytes()
    with coload.Registry(
        runtime="dry-run", devices="gfx90a", ignore_environment=True, max_decompressed_bytes=1024
    ) as registry:
        with pytest.raises(coload.LimitExceeded) as caught:
            registry.register_file(path)
    assert caught.value.status == coload.Status.LIMIT_EXCEEDED
    assert location(caught.value) == {
        "file": str(path),
        "bundle": 0,
        "bundle_offset": 0,
        "entry": None,
        "entry_id": None,
        "field": "uncompressed_size",
        "offset": 0x10,
        "value": u64_at(data, 0x10),
        "limit": 1024,
    }


def test_a_host_images_bundle_carries_its_offset() -> None:
    path = fixture("host/libkernels_mixed.so")
    data = path.read_bytes()
    assert data[0x1000:0x1004] == b"CCOB"
    with coload.Registry(
        runtime="dry-run", devices="gfx90a", ignore_environment=True, max_decompressed_bytes=1024
    ) as registry:
        with pytest.raises(coload.LimitExceeded) as caught:
            registry.register_file(path)
    assert (caught.value.file, caught.value.bundle, caught.value.bundle_offset) == (str(path), 0, 0x1000)
    assert (caught.value.field, caught.value.offset) == ("uncompressed_size", 0x10)
    assert (caught.value.value, caught.value.limit) == (u64_at(data, 0x1010), 1024)


def test_a_corrupt_code_object_names_its_entry_and_field(registry: coload.Registry) -> None:
    data = bytearray(fixture("bundles/driver_two_arch.hipfb").read_bytes())
    with registry.register_memory(bytes(data), "clean.hipfb") as clean:
        (choice,) = registry.choose(clean, 0)
    assert choice.entry_index == 2
    entry_offset = data.index(choice.code_object)  # stored in place: the entry's bytes are in the file
    struct.pack_into("<Q", data, entry_offset + 0x28, 0x7F000000)  # e_shoff, far past the code object
    binary = registry.register_memory(bytes(data), "corrupt.hipfb")
    with pytest.raises(coload.OutOfBounds) as caught:
        registry.load(binary, 0)
    assert caught.value.status == coload.Status.OUT_OF_BOUNDS
    assert location(caught.value) == {
        "file": "corrupt.hipfb",
        "bundle": 0,
        "bundle_offset": None,
        "entry": 2,
        "entry_id": "hipv4-amdgcn-amd-amdhsa--gfx90a",
        "field": "e_shoff",
        "offset": 0x28,
        "value": 0x7F000000,
        "limit": len(choice.code_object),
    }


def test_a_refused_load_names_its_bundle_entry_and_field() -> None:
    # lds_heavy (built for gfx950, 160 KiB of LDS) relabelled gfx942 (64 KiB):
    # the registry's admission refuses it, at the entry it chose.
    data = bytearray(fixture("check/lds_heavy-gfx950.co").read_bytes()).replace(b"gfx950", b"gfx942")
    assert data[48] == 0x4F  # e_flags' EF_AMDGPU_MACH: gfx950
    data[48] = 0x4C
    with coload.Registry(runtime="dry-run", devices="gfx942", ignore_environment=True) as registry:
        binary = registry.register_memory(bytes(data), "heavy.co")
        with pytest.raises(coload.LimitExceeded) as caught:
            registry.load(binary, 0)
    assert location(caught.value) == {
        "file": "heavy.co",
        "bundle": 0,
        "bundle_offset": None,
        "entry": 0,
        "entry_id": "hipv4-amdgcn-amd-amdhsa--gfx942",
        "field": "group_segment_fixed_size",
        "offset": None,
        "value": 98304,
        "limit": 65536,
    }


def test_an_error_without_a_place_has_none(registry: coload.Registry) -> None:
    with pytest.raises(coload.NotFound) as caught:
        registry.lookup_kernel(registry.register_file(fixture("bundles/driver_two_arch.hipfb")), 0, "no_such_kernel")
    assert location(caught.value) == dict.fromkeys(LOCATION_FIELDS)
    # Made in Python, from no failed call: nothing is read from the library.
    made = coload.Error("made here")
    assert location(made) == dict.fromkeys(LOCATION_FIELDS)


def test_a_library_without_the_call_leaves_every_field_none(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _library.has_function
    monkeypatch.setattr(_library, "has_function", lambda name: name != "coload_last_error_location" and real(name))
    with coload.Registry(
        runtime="dry-run", devices="gfx90a", ignore_environment=True, max_decompressed_bytes=1024
    ) as registry:
        with pytest.raises(coload.LimitExceeded, match="exceeds the limit 0x400") as caught:
            registry.register_file(fixture("compressed/driver_v3.hipfb"))
    assert location(caught.value) == dict.fromkeys(LOCATION_FIELDS)
