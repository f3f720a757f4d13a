"""coload.Registry over the dry-run runtime: every method, its results and
its errors (the C calls' contracts are tests/c_api_test.cpp's)."""

from __future__ import annotations

import threading

import pytest
from conftest import SAXPY, fixture

import coload


def test_devices_are_the_dry_run_specs(registry: coload.Registry) -> None:
    assert registry.devices() == ["gfx90a:sramecc+:xnack-", "gfx1100"]
    assert registry.device_count() == 2
    with pytest.raises(coload.InvalidArgument) as caught:
        registry.device_name(2)
    assert caught.value.status == coload.Status.INVALID_ARGUMENT
    assert caught.value.status_name == "invalid_argument"
    assert "device 2 out of range (2 devices)" in caught.value.message


def test_options_are_checked() -> None:
    with pytest.raises(coload.InvalidArgument, match="dry_run_devices"):
        coload.Registry(runtime="dry-run", devices="gfx9999", ignore_environment=True)
    with pytest.raises(coload.InvalidArgument, match="needs dry_run_devices"):
        coload.Registry(coload.Options(runtime="dry-run"))
    with pytest.raises(coload.InvalidArgument, match="hip_devices is not for the dry-run runtime"):
        coload.Registry(runtime="dry-run", devices="gfx90a", hip_devices=[0])
    with pytest.raises(ValueError, match="Options.runtime is 'cuda'"):
        coload.Registry(runtime="cuda")  # type: ignore[arg-type]
    options = coload.Options(runtime="dry-run", devices="gfx942")
    with coload.Registry(options, devices=("gfx90a", "gfx950")) as made:  # keywords override the dataclass
        assert made.devices() == ["gfx90a:sramecc+:xnack-", "gfx950:sramecc+:xnack-"]


def test_lookup_kernel_gives_its_sizes(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("host/libkernels_compressed.so"))
    kernel = registry.lookup_kernel(binary, 0, SAXPY)
    assert kernel == coload.Kernel(
        name=SAXPY,
        device=0,
        handle=0,
        kernarg_segment_size=288,
        kernarg_segment_align=8,
        explicit_kernarg_size=28,  # float, two pointers, int: the hidden arguments follow
        group_segment_size=0,
        private_segment_size=0,
        dynamic_callstack=False,
    )
    with pytest.raises(AttributeError):
        kernel.handle = 1  # type: ignore[misc]  # frozen
    assert registry.lookup_kernel(binary, 1, "_Z9block_sumPKfPfj").group_segment_size == 1024
    with pytest.raises(coload.NotFound, match='"missing"'):
        registry.lookup_kernel(binary, 0, "missing")
    with pytest.raises(coload.InvalidArgument):
        registry.lookup_kernel(binary, 9, SAXPY)


def test_lookup_global(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("host/libkernels_compressed.so"))
    assert registry.lookup_global(binary, 0, "dev_counter") == coload.Global("dev_counter", 0, 4)
    with pytest.raises(coload.NotFound, match="no_such_variable"):
        registry.lookup_global(binary, 0, "no_such_variable")


def test_check_dispatch(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("host/libkernels_compressed.so"))
    registry.check_dispatch(binary, 0, SAXPY, 28)
    registry.check_dispatch(binary, 0, SAXPY, 28, dynamic_lds=4096, workgroup_size=(256, 4, 1))
    with pytest.raises(coload.SizeMismatch, match="kernarg_bytes 27 is shorter than the explicit arguments"):
        registry.check_dispatch(binary, 0, SAXPY, 27)
    with pytest.raises(coload.LimitExceeded) as caught:
        registry.check_dispatch(binary, 0, SAXPY, 28, dynamic_lds=65537)
    assert caught.value.message == (
        'kernel "_Z5saxpyfPKfPfi": group_segment_fixed_size 0 + dynamic_lds 65537 = 65537 bytes'
        " exceeds the 65536-byte LDS of gfx90a"
    )
    with pytest.raises(coload.InvalidArgument, match="max_flat_workgroup_size"):
        registry.check_dispatch(binary, 0, SAXPY, 28, workgroup_size=(2048, 1, 1))


def test_static_lds_counts_against_the_device() -> None:
    with coload.Registry(runtime="dry-run", devices="gfx950", ignore_environment=True) as registry:
        binary = registry.register_file(fixture("check/lds_heavy-gfx950.co"))
        assert registry.lookup_kernel(binary, 0, "gemm_128x128").group_segment_size == 96 * 1024
        registry.check_dispatch(binary, 0, "gemm_128x128", 28, dynamic_lds=64 * 1024)
        with pytest.raises(coload.LimitExceeded, match="98304 \\+ dynamic_lds 65537 = 163841 bytes exceeds"):
            registry.check_dispatch(binary, 0, "gemm_128x128", 28, dynamic_lds=64 * 1024 + 1)


def test_load_and_no_fit(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"))
    registry.load(binary, 0)
    with pytest.raises(coload.NotFound) as caught:
        registry.load(binary, 1)
    assert caught.value.message.endswith(
        "driver_two_arch.hipfb: bundle 0: no code object fits device gfx1100; entries present:"
        " hipv4-amdgcn-amd-amdhsa--gfx1030, hipv4-amdgcn-amd-amdhsa--gfx90a"
    )


def test_missing_and_corrupt_files(registry: coload.Registry, tmp_path: object) -> None:
    with pytest.raises(coload.Io, match="/nonexistent.co: cannot open: No such file or directory"):
        registry.register_file("/nonexistent.co")
    code_object = fixture("co/gfx90a.co").read_bytes()
    with pytest.raises(coload.Malformed, match="only 64-bit little-endian ELF is supported"):
        registry.register_memory(b"\x7fELF" + bytes(60), "garbage.co")
    truncated = registry.register_memory(code_object[: len(code_object) // 2], "half.co")
    with pytest.raises(coload.OutOfBounds, match="half.co: .*section header table.*runs past the end"):
        registry.load(truncated, 0)
    with pytest.raises(coload.BadMagic):
        registry.register_memory(b"not a fat binary at all" * 4)


def test_register_memory_and_unregister(registry: coload.Registry) -> None:
    data = bytearray(fixture("bundles/driver_two_arch.hipfb").read_bytes())
    binary = registry.register_memory(data, "two_arch")
    data[:] = bytes(len(data))  # the registry holds its own copy
    assert binary.name == "two_arch"
    assert registry.lookup_kernel(binary, 0, SAXPY).kernarg_segment_size == 288
    handle = binary.handle
    binary.close()
    assert binary.closed
    binary.close()  # twice: nothing
    with pytest.raises(coload.NotFound, match=f"handle {handle}"):
        registry.lookup_kernel(handle, 0, SAXPY)
    with pytest.raises(coload.NotFound):
        registry.unregister(handle)


def test_choose_hands_over_each_bundle(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("host/libkernels_compressed.so"))
    choices = registry.choose(binary, 0)
    assert [choice.bundle for choice in choices] == [0, 1, 2]
    first = choices[0]
    assert first.chosen and first.status == coload.Status.OK and first.message == ""
    assert (first.entry_id, first.tier) == ("hipv4-amdgcn-amd-amdhsa--gfx90a", coload.Tier.NATIVE)
    assert first.code_object[:4] == b"\x7fELF"
    assert not choices[1].chosen and choices[1].status == coload.Status.NOT_FOUND
    assert "bundle 1: no code object fits device gfx90a" in choices[1].message
    assert choices[1].entry_id is None and choices[1].code_object == b""
    if not coload.has_function("coload_register_directory"):  # a library whose coload_choice has no file
        assert first.file is None


def test_context_managers_release_and_closing_twice_is_harmless() -> None:
    registry = coload.Registry(runtime="dry-run", devices="gfx90a", ignore_environment=True)
    with registry.register_file(fixture("bundles/driver_two_arch.hipfb")) as binary:
        registry.load(binary, 0)
    assert binary.closed
    kept = registry.register_file(fixture("bundles/driver_two_arch.hipfb"))
    with registry:
        pass
    assert registry.closed and kept.closed
    registry.close()
    kept.close()  # its registry is gone: nothing to do
    with pytest.raises(coload.InvalidHandle, match="the registry is closed"):
        registry.devices()


def test_log_callback_receives_a_failed_load() -> None:
    lines: list[tuple[coload.LogLevel, str]] = []
    with coload.Registry(
        runtime="dry-run", devices="gfx942", ignore_environment=True, decode_threads=1, log=lambda *line: lines.append(line)
    ) as registry:
        binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"))
        with pytest.raises(coload.NotFound):
            registry.lookup_kernel(binary, 0, SAXPY)
    assert len(lines) == 1
    assert lines[0][0] == coload.LogLevel.WARN
    assert "no code object fits device gfx942" in lines[0][1]


def test_each_thread_gets_its_own_message(registry: coload.Registry) -> None:
    binary = registry.register_file(fixture("bundles/driver_two_arch.hipfb"))
    messages: dict[str, str] = {}

    def fail(kernel: str) -> None:
        for _ in range(50):
            try:
                registry.lookup_kernel(binary, 0, kernel)
            except coload.NotFound as error:
                if f'"{kernel}"' not in error.message:
                    messages[kernel] = error.message
                    return
        messages[kernel] = "ok"

    threads = [threading.Thread(target=fail, args=(f"kernel_{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert messages == {f"kernel_{i}": "ok" for i in range(4)}
