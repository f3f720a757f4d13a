"""Finding and opening libcoload.so.0, the C structs as ctypes declares them,
and the functions' prototypes (include/coload/coload.h).

The library is opened on first use, not at import: ``import coload`` works
without it. Functions a newer library added are looked up when first
called, so an older library serves everything it has and the rest raises
``LibraryTooOld``.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import threading
from typing import Any

from .errors import LibraryNotFound, LibraryTooOld, error_for

ENVIRONMENT_VARIABLE = "COLOAD_LIBRARY"
SONAME = "libcoload.so.0"

c_size = ctypes.c_size_t
c_status = ctypes.c_int  # the C enums are ints
c_binary = ctypes.c_uint64

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class RegistryOptions(ctypes.Structure):
    """coload_registry_options."""

    _fields_ = [
        ("struct_size", c_size),
        ("runtime", ctypes.c_int),
        ("dry_run_devices", ctypes.c_char_p),
        ("runtime_library", ctypes.c_char_p),
        ("ignore_environment", ctypes.c_int),
        ("decode_threads", ctypes.c_uint32),
        ("log", LOG_FN),
        ("log_user_data", ctypes.c_void_p),
        ("hsa_agents", ctypes.POINTER(ctypes.c_uint64)),
        ("hsa_agent_count", c_size),
        ("hip_devices", ctypes.POINTER(ctypes.c_int)),
        ("hip_device_count", c_size),
        ("unbundler", ctypes.c_int),
        ("extended_isa_compat", ctypes.c_char_p),
        ("hotswap", ctypes.c_int),
        ("hotswap_plugin", ctypes.c_char_p),
        ("hotswap_pairs", ctypes.c_char_p),
        ("hash_check", ctypes.c_int),
        ("max_decompressed_bytes", ctypes.c_uint64),
        ("log_level", ctypes.c_int),
        ("verify_cache", ctypes.c_char_p),
        ("kpack_root", ctypes.c_char_p),
        ("kpack_binary_path", ctypes.c_char_p),
    ]


class KernelInfo(ctypes.Structure):
    """coload_kernel_info."""

    _fields_ = [
        ("struct_size", c_size),
        ("handle", ctypes.c_uint64),
        ("kernarg_segment_size", ctypes.c_uint32),
        ("kernarg_segment_align", ctypes.c_uint32),
        ("group_segment_size", ctypes.c_uint32),
        ("private_segment_size", ctypes.c_uint32),
        ("dynamic_callstack", ctypes.c_int),
        ("explicit_kernarg_size", ctypes.c_uint32),
    ]


class Choice(ctypes.Structure):
    """coload_choice, with the ``file`` member a newer library adds: read it
    only when the library's ``struct_size`` covers it (``CHOICE_FILE_END``)."""

    _fields_ = [
        ("struct_size", c_size),
        ("bundle", c_size),
        ("status", c_status),
        ("message", ctypes.c_char_p),
        ("entry_index", c_size),
        ("entry_id", ctypes.c_char_p),
        ("tier", ctypes.c_int),
        ("bytes", ctypes.c_void_p),
        ("size", c_size),
        ("file", ctypes.c_char_p),
    ]


CHOICE_FILE_END: int = Choice.file.offset + ctypes.sizeof(ctypes.c_char_p)
CHOOSE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Choice))


class ErrorLocation(ctypes.Structure):
    """coload_error_location."""

    _fields_ = [
        ("struct_size", c_size),
        ("status", c_status),
        ("has", ctypes.c_uint32),
        ("file", ctypes.c_char_p),
        ("bundle", ctypes.c_uint64),
        ("bundle_offset", ctypes.c_uint64),
        ("entry", ctypes.c_uint64),
        ("entry_id", ctypes.c_char_p),
        ("field", ctypes.c_char_p),
        ("offset", ctypes.c_uint64),
        ("value", ctypes.c_uint64),
        ("limit", ctypes.c_uint64),
    ]


# coload_error_location's numbers and their COLOAD_LOCATION_HAS_* bits.
LOCATION_NUMBERS: dict[str, int] = {
    "bundle": 1 << 0,
    "bundle_offset": 1 << 1,
    "entry": 1 << 2,
    "offset": 1 << 3,
    "value": 1 << 4,
    "limit": 1 << 5,
}
LOCATION_STRINGS = ("file", "entry_id", "field")


class SelectOptions(ctypes.Structure):
    """coload_select_options."""

    _fields_ = [
        ("struct_size", c_size),
        ("ignore_environment", ctypes.c_int),
        ("hash_check", ctypes.c_int),
        ("max_decompressed_bytes", ctypes.c_uint64),
        ("extended_isa_compat", ctypes.c_char_p),
    ]


class Selected(ctypes.Structure):
    """coload_selected."""

    _fields_ = [
        ("struct_size", c_size),
        ("status", c_status),
        ("message", ctypes.c_char_p),
        ("tier", ctypes.c_int),
        ("entry_index", c_size),
        ("entry_id", ctypes.c_char_p),
        ("bytes", ctypes.c_void_p),
        ("size", c_size),
        ("offset", c_size),
        ("owned", ctypes.c_int),
        ("report", ctypes.c_char_p),
    ]


class Selection(ctypes.Structure):
    """coload_selection."""

    _fields_ = [
        ("image", ctypes.c_void_p),
        ("image_size", c_size),
        ("count", c_size),
        ("results", ctypes.POINTER(ctypes.POINTER(Selected))),
    ]


class KpackEntry(ctypes.Structure):
    """coload_kpack_entry."""

    _fields_ = [
        ("struct_size", c_size),
        ("bundle", c_size),
        ("key", ctypes.c_char_p),
        ("binary", ctypes.c_char_p),
        ("has_index", ctypes.c_int),
        ("index", ctypes.c_uint32),
        ("target", ctypes.c_char_p),
        ("entry_id", ctypes.c_char_p),
        ("ordinal", ctypes.c_uint32),
        ("original_size", ctypes.c_uint64),
        ("stored_offset", ctypes.c_uint64),
        ("stored_size", ctypes.c_uint64),
    ]


class KpackListing(ctypes.Structure):
    """coload_kpack_listing."""

    _fields_ = [
        ("struct_size", c_size),
        ("scheme", ctypes.c_int),
        ("group_name", ctypes.c_char_p),
        ("gfx_arch_family", ctypes.c_char_p),
        ("gfx_arch_count", c_size),
        ("gfx_arches", ctypes.POINTER(ctypes.c_char_p)),
        ("code_objects", c_size),
        ("count", c_size),
        ("entries", ctypes.POINTER(ctypes.POINTER(KpackEntry))),
    ]


class KpackObject(ctypes.Structure):
    """coload_kpack_object."""

    _fields_ = [
        ("struct_size", c_size),
        ("bytes", ctypes.c_void_p),
        ("size", c_size),
        ("entry_id", ctypes.c_char_p),
        ("bundle", c_size),
    ]


_p = ctypes.POINTER
_registry = ctypes.c_void_p
_char_p = ctypes.c_char_p
# name: (restype, argtypes), as coload.h declares them.
PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "coload_registry_create": (c_status, [_p(RegistryOptions), _p(_registry)]),
    "coload_registry_destroy": (c_status, [_registry]),
    "coload_register_file": (c_status, [_registry, _char_p, _p(c_binary)]),
    "coload_register_memory": (c_status, [_registry, ctypes.c_void_p, c_size, _char_p, _p(c_binary)]),
    "coload_register_files": (c_status, [_registry, _p(_char_p), c_size, _p(c_binary)]),
    "coload_register_directory": (c_status, [_registry, _char_p, _char_p, ctypes.c_int, _p(c_binary)]),
    "coload_unregister": (c_status, [_registry, c_binary]),
    "coload_load": (c_status, [_registry, c_binary, c_size]),
    "coload_lookup_kernel": (c_status, [_registry, c_binary, c_size, _char_p, _p(KernelInfo)]),
    "coload_lookup_global": (
        c_status,
        [_registry, c_binary, c_size, _char_p, _p(ctypes.c_uint64), _p(c_size)],
    ),
    "coload_check_dispatch": (
        c_status,
        [_registry, c_binary, c_size, _char_p, ctypes.c_uint64, ctypes.c_uint64, _p(ctypes.c_uint32)],
    ),
    "coload_choose": (c_status, [_registry, c_binary, c_size, CHOOSE_FN, ctypes.c_void_p]),
    "coload_device_count": (c_status, [_registry, _p(c_size)]),
    "coload_device_name": (c_status, [_registry, c_size, _char_p, c_size, _p(c_size)]),
    "coload_last_error_message": (_char_p, []),
    "coload_last_error_location": (c_status, [_p(ErrorLocation)]),
    "coload_status_string": (_char_p, [c_status]),
    "coload_version": (_char_p, []),
    "coload_select": (
        c_status,
        [ctypes.c_void_p, c_size, _p(_char_p), c_size, _p(SelectOptions), _p(_p(Selection))],
    ),
    "coload_selection_free": (None, [_p(Selection)]),
    "coload_kpack_list": (c_status, [_char_p, _p(_p(KpackListing))]),
    "coload_kpack_listing_free": (None, [_p(KpackListing)]),
    "coload_kpack_extract": (c_status, [_char_p, _char_p, _char_p, _p(_p(KpackObject))]),
    "coload_kpack_object_free": (None, [_p(KpackObject)]),
}

_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_functions: dict[str, Any] = {}


def library_path() -> str:
    """Where libcoload.so.0 is opened from: ``$COLOAD_LIBRARY`` when set;
    else the path the build or install recorded in ``coload/_paths.py``
    (relative to the package); else the SONAME, for the dynamic loader's
    search (LD_LIBRARY_PATH, the system's directories)."""
    override = os.environ.get(ENVIRONMENT_VARIABLE)
    if override:
        return override
    try:
        paths = importlib.import_module("._paths", __package__)
    except ImportError:
        return SONAME
    recorded = getattr(paths, "LIBRARY", None)
    if not isinstance(recorded, str):
        return SONAME
    # Lexically, as the install laid the tree out: dlopen would resolve ".."
    # through a symlinked directory instead.
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(paths.__file__ or "")), recorded))


def library() -> ctypes.CDLL:
    """The opened library (opened on the first call)."""
    global _library
    with _lock:
        if _library is None:
            path = library_path()
            try:
                _library = ctypes.CDLL(path)
            except OSError as error:
                raise LibraryNotFound(
                    f"cannot open {path}: {error} (set {ENVIRONMENT_VARIABLE} to the path of libcoload.so.0)"
                ) from None
        return _library


def has_function(name: str) -> bool:
    """Whether the opened library exports `name` (a newer one may add functions)."""
    return hasattr(library(), name)


def function(name: str) -> Any:
    """The C function `name` with its prototype. Raises LibraryTooOld when
    the library lacks it."""
    found = _functions.get(name)
    if found is not None:
        return found
    opened = library()
    try:
        found = getattr(opened, name)
    except AttributeError:
        raise LibraryTooOld(
            f"{opened._name} (coload {version()}) has no {name}: a newer libcoload.so.0 is needed"
        ) from None
    found.restype, found.argtypes = PROTOTYPES[name]
    _functions[name] = found
    return found


def version() -> str:
    """coload_version(): the opened library's "MAJOR.MINOR.PATCH"."""
    text: bytes = function("coload_version")()
    return text.decode()


def decode(text: bytes | None) -> str:
    """A C string the library returned (never null by contract; "" if it is)."""
    return text.decode("utf-8", errors="replace") if text else ""


def last_error_location(status: int) -> dict[str, str | int]:
    """Where this thread's last error, of `status`, lies, as
    coload_last_error_location() gives it: the strings that are not "" and
    the numbers its `has` bits set; empty when the library has no such call
    or its last error is not of `status`."""
    if not has_function("coload_last_error_location"):
        return {}
    location = ErrorLocation(struct_size=ctypes.sizeof(ErrorLocation))
    if function("coload_last_error_location")(ctypes.byref(location)) != 0 or location.status != status:
        return {}
    where: dict[str, str | int] = {}
    for name in LOCATION_STRINGS:
        text = decode(getattr(location, name))
        if text:
            where[name] = text
    for name, bit in LOCATION_NUMBERS.items():
        if location.has & bit:
            where[name] = int(getattr(location, name))
    return where


def call(name: str, *arguments: Any) -> None:
    """Calls `name`; on a failed status, raises its Error with the message
    and location this thread's coload_last_error_message() and
    coload_last_error_location() give right after the call."""
    status: int = function(name)(*arguments)
    if status != 0:
        message = decode(function("coload_last_error_message")())
        location = last_error_location(status)
        status_name = decode(function("coload_status_string")(status))
        raise error_for(status, message, status_name, location)
