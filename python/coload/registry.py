"""A registry of fat binaries over one runtime (coload_registry, coload/coload.h).

Registering reads headers only; the first lookup of a (binary, device) pair
chooses, validates and loads, once (docs/loading.md). Kernel handles stay
valid until their binary is unregistered or the registry closed; a Binary
dropped without ``close()`` stays registered until its registry closes, so
a handle never dangles because Python collected an object.
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import os
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

from . import _arguments as arg
from . import _library as lib
from .errors import BufferTooSmall, InvalidHandle, Status, known_status

PathLike = str | os.PathLike[str]
RuntimeName = Literal["hsa", "hip", "dry-run"]


class LogLevel(enum.IntEnum):
    """coload_log_level: a message's severity."""

    ERROR = 0
    WARN = 1
    INFO = 2
    DEBUG = 3


class Tier(enum.IntEnum):
    """coload_tier: how an entry fits a device (docs/selection.md)."""

    NATIVE = 0
    EQUIVALENT = 1
    GENERIC = 2
    HOTSWAP = 3


_RUNTIMES = {"hsa": 0, "hip": 1, "dry-run": 2}
_UNBUNDLERS = {None: 0, "builtin": 1, "comgr": 2}
_HASH_CHECKS = {None: 0, "verify": 1, "skip": 2}
_LOG_LEVELS = {None: 0, "error": 1, "warn": 2, "info": 3, "debug": 4}


@dataclass(frozen=True)
class Options:
    """coload_registry_options. A setting left at None (or 0) is taken from
    its COLOAD_* variable (docs/environment.md) unless ``ignore_environment``,
    then from its default."""

    runtime: RuntimeName = "hsa"
    #: dry-run: the devices, target IDs ("gfx90a", "gfx942:xnack+"), as a list or comma-separated.
    devices: str | Sequence[str] | None = None
    #: hsa/hip: the library to open instead of the default.
    runtime_library: PathLike | None = None
    ignore_environment: bool = False
    #: threads a first lookup may read bundles on; 0: as coload decides (one per bundle up to the hardware's, at most 8).
    decode_threads: int = 0
    #: receives the registry's messages (any thread, keep it short); None: stderr.
    log: Callable[[LogLevel, str], None] | None = None
    #: hsa: the GPU agents (hsa_agent_t handles) to use, in this order.
    hsa_agents: Sequence[int] | None = None
    #: hip: the device ordinals to use, in this order.
    hip_devices: Sequence[int] | None = None
    unbundler: Literal["builtin", "comgr"] | None = None
    extended_isa_compat: str | None = None
    hotswap: bool | None = None
    hotswap_plugin: PathLike | None = None
    hotswap_pairs: str | None = None
    hash_check: Literal["verify", "skip"] | None = None
    max_decompressed_bytes: int = 0
    log_level: Literal["error", "warn", "info", "debug"] | None = None
    verify_cache: str | None = None
    #: where a HIPK image's archive paths start, in place of the binary's directory (COLOAD_KPACK_ROOT).
    kpack_root: PathLike | None = None
    #: the file of every HIPK wrapper registered, when the caller knows it better than the mapping.
    kpack_binary_path: PathLike | None = None


def _text(value: PathLike | None, field: str) -> bytes | None:
    return arg.optional_path(value, f"Options.{field}")


@dataclass(frozen=True)
class Kernel:
    """A kernel as the runtime registered it (coload_kernel_info)."""

    name: str
    device: int
    #: HSA: the AQL kernel_object; HIP: the hipFunction_t; dry-run: 0.
    handle: int
    kernarg_segment_size: int
    kernarg_segment_align: int
    #: where the explicit arguments a launch packs end: the kernarg_bytes check_dispatch expects.
    explicit_kernarg_size: int
    #: static LDS bytes.
    group_segment_size: int
    #: scratch bytes per work-item.
    private_segment_size: int
    #: True when the private size is only a lower bound.
    dynamic_callstack: bool


@dataclass(frozen=True)
class Global:
    """A device global variable (coload_lookup_global): where the runtime placed it and its size."""

    name: str
    address: int
    size: int


@dataclass(frozen=True)
class Choice:
    """One bundle's choice for a device (coload_choice; coload_selected for ``coload.select``)."""

    bundle: int
    #: Status.OK when an entry was chosen; NOT_FOUND when none fits; another: the bundle was unreadable.
    status: int
    #: why nothing was chosen; "" when an entry was.
    message: str
    entry_index: int | None
    entry_id: str | None
    tier: Tier | None
    #: the chosen code object as stored; b"" when none.
    code_object: bytes
    #: the file it came from: a folder's or a file list's member (None when the library does not say).
    file: str | None = None
    #: coload.select: the entry's offset in the image (as comgr's), when it is a view of it.
    offset: int | None = None

    @property
    def chosen(self) -> bool:
        """Whether an entry was chosen."""
        return self.status == Status.OK


class Binary:
    """A registered fat binary (coload_binary). ``close()`` (or leaving a
    ``with`` block) unregisters it; every dispatch of its kernels must have
    finished first. Closing twice, or after the registry closed, does nothing."""

    def __init__(self, registry: Registry, handle: int, name: str, keep: object = None) -> None:
        self.registry: Registry = registry
        self.handle: int = handle
        self.name: str = name
        self._keep = keep  # register_memory's bytes, which must outlive the registration

    @property
    def closed(self) -> bool:
        """Whether it was unregistered (or its registry closed)."""
        return self.registry._binaries.get(self.handle) is not self

    def close(self) -> None:
        """Unregisters the binary (coload_unregister)."""
        self.registry.unregister(self)

    def __enter__(self) -> Binary:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<coload.Binary {self.handle} {self.name!r}{' closed' if self.closed else ''}>"


class Registry:
    """A registry over one runtime's devices (coload_registry_create).

    ``Registry(Options(runtime="dry-run", devices="gfx942"))``, or the same
    fields as keywords: ``Registry(runtime="dry-run", devices=["gfx942"])``.
    Devices are numbered as ``devices()`` lists them. Every method may be
    called from several threads at once; ``close()`` must come last.
    """

    def __init__(self, options: Options | None = None, **fields: Any) -> None:
        self.options: Options = dataclasses.replace(options or Options(), **fields)
        self._lock = threading.Lock()
        self._binaries: dict[int, Binary] = {}
        self._handle: int | None = None
        self._log = _log_trampoline(self.options.log)  # kept alive as long as the registry
        arrays: list[Any] = []  # read during the call only
        c_options = _c_options(self.options, self._log, arrays)
        handle = ctypes.c_void_p()
        lib.call("coload_registry_create", ctypes.byref(c_options), ctypes.byref(handle))
        self._handle = handle.value

    # -- lifetime -------------------------------------------------------------
    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._handle is None

    def close(self) -> None:
        """Unloads everything and destroys the registry (coload_registry_destroy).
        Every dispatch of its kernels must have finished. Closing twice does nothing."""
        with self._lock:
            handle, self._handle = self._handle, None
            # Held until the registry is gone: register_memory's bytes must outlive what read them.
            binaries, self._binaries = self._binaries, {}
        if handle is not None:
            lib.call("coload_registry_destroy", handle)
        binaries.clear()

    def __enter__(self) -> Registry:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # At interpreter shutdown the library may be gone or mid-teardown; it
        # releases its runtime at process exit itself (docs/loading.md, "Shutdown").
        if getattr(self, "_handle", None) is not None and not sys.is_finalizing():
            try:
                self.close()
            except Exception:  # noqa: BLE001 - a destructor must not raise
                pass

    def _live(self) -> int:
        handle = self._handle
        if handle is None:
            raise InvalidHandle("the registry is closed", Status.INVALID_HANDLE, "invalid_handle")
        return handle

    # -- devices ----------------------------------------------------------------
    def device_count(self) -> int:
        """The number of devices (coload_device_count)."""
        count = ctypes.c_size_t()
        lib.call("coload_device_count", self._live(), ctypes.byref(count))
        return count.value

    def device_name(self, device: int) -> str:
        """Device `device`'s target ID, "gfx90a:sramecc+:xnack-" (coload_device_name)."""
        required = ctypes.c_size_t()
        buffer = ctypes.create_string_buffer(64)
        try:
            lib.call("coload_device_name", self._live(), arg.size(device, "device"), buffer, len(buffer),
                     ctypes.byref(required))
        except BufferTooSmall:
            buffer = ctypes.create_string_buffer(required.value)
            lib.call("coload_device_name", self._live(), device, buffer, len(buffer), ctypes.byref(required))
        return buffer.value.decode()

    def devices(self) -> list[str]:
        """Every device's target ID, by device number."""
        return [self.device_name(index) for index in range(self.device_count())]

    # -- registering ----------------------------------------------------------
    def _adopt(self, handle: int, name: str, keep: object = None) -> Binary:
        binary = Binary(self, handle, name, keep)
        with self._lock:
            self._binaries[handle] = binary
        return binary

    def register_file(self, path: PathLike) -> Binary:
        """Maps the file and registers it: a bundle, a CCOB, a code object or a
        host image (headers read, nothing decompressed or loaded)."""
        out = lib.c_binary()
        lib.call("coload_register_file", self._live(), arg.path(path, "path"), ctypes.byref(out))
        return self._adopt(out.value, os.fsdecode(path))

    def register_memory(self, data: bytes | bytearray | memoryview, name: str | None = None) -> Binary:
        """Registers a copy of `data`, kept as long as the binary; `name` appears in errors."""
        copy = ctypes.create_string_buffer(bytes(data), len(data))
        out = lib.c_binary()
        encoded = None if name is None else arg.text(name, "name")
        lib.call("coload_register_memory", self._live(), copy, len(data), encoded, ctypes.byref(out))
        return self._adopt(out.value, name or "<memory>", copy)

    def register_files(self, paths: Iterable[PathLike]) -> Binary:
        """Registers several files (bare code objects or bundles) as one fat
        binary (coload_register_files; a newer library's)."""
        encoded = [arg.path(path, f"paths[{index}]") for index, path in enumerate(paths)]
        array = (ctypes.c_char_p * len(encoded))(*encoded)
        out = lib.c_binary()
        lib.call("coload_register_files", self._live(), array, len(encoded), ctypes.byref(out))
        return self._adopt(out.value, ", ".join(os.fsdecode(path) for path in encoded))

    def register_directory(self, path: PathLike, pattern: str | None = None, recursive: bool = False) -> Binary:
        """Registers the files of a folder whose names match `pattern` (an
        fnmatch glob; None: all; with a '/', paths relative to the folder,
        "gfx942/*.co"), in subfolders too when `recursive`, as one fat binary
        (coload_register_directory; a newer library's)."""
        out = lib.c_binary()
        lib.call(
            "coload_register_directory",
            self._live(),
            arg.path(path, "path"),
            None if pattern is None else arg.text(pattern, "pattern"),
            int(recursive),
            ctypes.byref(out),
        )
        return self._adopt(out.value, os.fsdecode(path))

    def unregister(self, binary: Binary | int) -> None:
        """Unloads the binary on every device and releases it (coload_unregister).
        A Binary already closed, or of a closed registry, is left alone."""
        if isinstance(binary, Binary):
            if binary.registry is not self:
                raise ValueError(f"{binary!r} belongs to another registry")
            with self._lock:
                if self._handle is None or self._binaries.get(binary.handle) is not binary:
                    return
                del self._binaries[binary.handle]
            lib.call("coload_unregister", self._live(), binary.handle)
            return
        binary = arg.uint64(binary, "binary")
        with self._lock:
            held = self._binaries.pop(binary, None)  # its bytes outlive the unregistering
        lib.call("coload_unregister", self._live(), binary)
        del held

    # -- loading and looking up ---------------------------------------------
    def load(self, binary: Binary | int, device: int) -> None:
        """Loads the binary on `device` as a first kernel lookup would
        (choosing, validating, loading; once). Raises what that reports: a
        validation error, NotFound when no code object fits (coload_load)."""
        lib.call("coload_load", self._live(), _handle(binary), arg.size(device, "device"))

    def lookup_kernel(self, binary: Binary | int, device: int, name: str) -> Kernel:
        """The kernel `name` of the binary on `device`, loading it there first if needed."""
        info = lib.KernelInfo(struct_size=ctypes.sizeof(lib.KernelInfo))
        lib.call(
            "coload_lookup_kernel",
            self._live(),
            _handle(binary),
            arg.size(device, "device"),
            arg.text(name, "name"),
            ctypes.byref(info),
        )
        return Kernel(
            name=name,
            device=device,
            handle=info.handle,
            kernarg_segment_size=info.kernarg_segment_size,
            kernarg_segment_align=info.kernarg_segment_align,
            explicit_kernarg_size=info.explicit_kernarg_size,
            group_segment_size=info.group_segment_size,
            private_segment_size=info.private_segment_size,
            dynamic_callstack=bool(info.dynamic_callstack),
        )

    def lookup_global(self, binary: Binary | int, device: int, name: str) -> Global:
        """The device global `name` (a __device__ or __constant__ variable) on `device`."""
        address, size = ctypes.c_uint64(), ctypes.c_size_t()
        lib.call(
            "coload_lookup_global",
            self._live(),
            _handle(binary),
            arg.size(device, "device"),
            arg.text(name, "name"),
            ctypes.byref(address),
            ctypes.byref(size),
        )
        return Global(name, address.value, size.value)

    def check_dispatch(
        self,
        binary: Binary | int,
        device: int,
        name: str,
        kernarg_bytes: int,
        dynamic_lds: int = 0,
        workgroup_size: tuple[int, int, int] | None = None,
    ) -> None:
        """Checks a dispatch of kernel `name` before it is submitted: the
        packed explicit arguments' length, static + dynamic LDS against the
        device, the workgroup size against the kernel's limits. Raises
        SizeMismatch, LimitExceeded or InvalidArgument naming the kernel, the
        field, the value and the limit (coload_check_dispatch)."""
        sizes = None
        if workgroup_size is not None:
            if len(workgroup_size) != 3:
                raise ValueError(f"workgroup_size has {len(workgroup_size)} values; it takes (x, y, z)")
            checked = (arg.uint32(value, f"workgroup_size[{axis}]") for axis, value in enumerate(workgroup_size))
            sizes = (ctypes.c_uint32 * 3)(*checked)
        lib.call(
            "coload_check_dispatch",
            self._live(),
            _handle(binary),
            arg.size(device, "device"),
            arg.text(name, "name"),
            arg.uint64(kernarg_bytes, "kernarg_bytes"),
            arg.uint64(dynamic_lds, "dynamic_lds"),
            sizes,
        )

    def choose(self, binary: Binary | int, device: int) -> list[Choice]:
        """Each bundle's choice for `device`, in bundle order; nothing loaded
        (coload_choose). A bundle with no fit or unreadable is a Choice with
        its status and message, not an exception."""
        choices: list[Choice] = []

        def take(_: Any, pointer: Any) -> int:
            choice = pointer.contents
            choices.append(_choice_of(choice, choice.bundle, _file_of(choice)))
            return 1

        callback = lib.CHOOSE_FN(take)
        lib.call("coload_choose", self._live(), _handle(binary), arg.size(device, "device"), callback, None)
        return choices

    def __repr__(self) -> str:
        return f"<coload.Registry {self.options.runtime}{' closed' if self.closed else ''}>"


def _handle(binary: Binary | int) -> int:
    return binary.handle if isinstance(binary, Binary) else arg.uint64(binary, "binary")


def _choice_of(made: Any, bundle: int, file: str | None, offset: int | None = None) -> Choice:
    """A Choice from a coload_choice or a coload_selected (the fields they share)."""
    chosen = made.status == Status.OK
    return Choice(
        bundle=bundle,
        status=known_status(made.status),
        message=lib.decode(made.message),
        entry_index=made.entry_index if chosen else None,
        entry_id=lib.decode(made.entry_id) if chosen else None,
        tier=Tier(made.tier) if chosen else None,
        code_object=ctypes.string_at(made.bytes, made.size) if chosen and made.bytes else b"",
        file=file,
        offset=offset if chosen else None,
    )


def _file_of(choice: Any) -> str | None:
    """coload_choice's file, when the library's struct has it."""
    has_file = choice.struct_size >= lib.CHOICE_FILE_END
    return os.fsdecode(choice.file) if has_file and choice.file else None


def _log_trampoline(log: Callable[[LogLevel, str], None] | None) -> Any:
    if log is None:
        return lib.LOG_FN(0)  # null: messages go to stderr
    receiver = log

    def receive(_: Any, level: int, message: bytes | None) -> None:
        receiver(LogLevel(level), lib.decode(message))

    return lib.LOG_FN(receive)


def _pick(table: dict[Any, int], value: object, field: str) -> int:
    if value not in table:
        choices = ", ".join(repr(key) for key in table)
        raise ValueError(f"Options.{field} is {value!r}; one of {choices}")
    return table[value]


def _c_options(options: Options, log: Any, arrays: list[Any]) -> lib.RegistryOptions:
    devices = options.devices
    if devices is not None and not isinstance(devices, str):
        devices = ",".join(devices)
    c = lib.RegistryOptions(
        struct_size=ctypes.sizeof(lib.RegistryOptions),
        runtime=_pick(_RUNTIMES, options.runtime, "runtime"),
        dry_run_devices=_text(devices, "devices"),
        runtime_library=_text(options.runtime_library, "runtime_library"),
        ignore_environment=int(options.ignore_environment),
        decode_threads=arg.uint32(options.decode_threads, "Options.decode_threads"),
        log=log,
        unbundler=_pick(_UNBUNDLERS, options.unbundler, "unbundler"),
        extended_isa_compat=_text(options.extended_isa_compat, "extended_isa_compat"),
        hotswap=0 if options.hotswap is None else 2 if options.hotswap else 1,
        hotswap_plugin=_text(options.hotswap_plugin, "hotswap_plugin"),
        hotswap_pairs=_text(options.hotswap_pairs, "hotswap_pairs"),
        hash_check=_pick(_HASH_CHECKS, options.hash_check, "hash_check"),
        max_decompressed_bytes=arg.uint64(options.max_decompressed_bytes, "Options.max_decompressed_bytes"),
        log_level=_pick(_LOG_LEVELS, options.log_level, "log_level"),
        verify_cache=_text(options.verify_cache, "verify_cache"),
        kpack_root=_text(options.kpack_root, "kpack_root"),
        kpack_binary_path=_text(options.kpack_binary_path, "kpack_binary_path"),
    )
    if options.hsa_agents is not None:
        checked = [arg.uint64(agent, f"Options.hsa_agents[{i}]") for i, agent in enumerate(options.hsa_agents)]
        agents = (ctypes.c_uint64 * len(checked))(*checked)
        arrays.append(agents)
        c.hsa_agents, c.hsa_agent_count = agents, len(options.hsa_agents)
    if options.hip_devices is not None:
        ints = [arg.int32(ordinal, f"Options.hip_devices[{i}]") for i, ordinal in enumerate(options.hip_devices)]
        ordinals = (ctypes.c_int * len(ints))(*ints)
        arrays.append(ordinals)
        c.hip_devices, c.hip_device_count = ordinals, len(options.hip_devices)
    return c
