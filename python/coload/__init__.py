"""coload for Python: AMD GPU fat binaries chosen, checked and loaded per
device, over libcoload.so.0's C API (coload/coload.h) with ctypes.

    import coload
    with coload.Registry(runtime="dry-run", devices="gfx942") as registry:
        binary = registry.register_file("kernels.hipfb")
        kernel = registry.lookup_kernel(binary, 0, "_Z5saxpyfPKfPfi")
        registry.check_dispatch(binary, 0, kernel.name, kernel.explicit_kernarg_size, dynamic_lds=4096)

Errors raise ``coload.Error`` subclasses (``NotFound``, ``LimitExceeded``…)
with ``.status``, ``.message`` and where they lie (``.file``, ``.bundle``,
``.entry``, ``.field``, ``.value``, ``.limit``…). docs/python.md has the
whole interface.
"""

from __future__ import annotations

from ._library import library_path
from ._library import version as _version
from .errors import (
    Ambiguous,
    BadMagic,
    BadStructSize,
    BufferTooSmall,
    CorruptData,
    Error,
    HashMismatch,
    Internal,
    InvalidArgument,
    InvalidHandle,
    Io,
    LibraryError,
    LibraryNotFound,
    LibraryTooOld,
    LimitExceeded,
    Malformed,
    NotFound,
    NullArgument,
    OutOfBounds,
    OutOfMemory,
    Overflow,
    SizeMismatch,
    Status,
    Truncated,
    UnsupportedMethod,
    UnsupportedVersion,
)
from .kpack import KpackArchive, KpackEntry, kpack_archive, kpack_extract
from .registry import Binary, Choice, Global, Kernel, LogLevel, Options, Registry, Tier
from .select import Selection, check, select


def version() -> str:
    """The library's version, "MAJOR.MINOR.PATCH" (coload_version)."""
    return _version()


def has_function(name: str) -> bool:
    """Whether the opened library has the C function `name`: a newer one
    adds functions (coload_register_directory…); calling a missing one
    raises LibraryTooOld."""
    from ._library import has_function as _has

    return _has(name)


def devices(runtime: str = "hsa", runtime_library: str | None = None) -> list[str]:
    """The target IDs of a runtime's devices ("hsa" or "hip"), by device
    number. Raises NotFound when there is no GPU."""
    with Registry(runtime=runtime, runtime_library=runtime_library) as registry:
        return registry.devices()


__all__ = [
    "Ambiguous",
    "BadMagic",
    "BadStructSize",
    "Binary",
    "BufferTooSmall",
    "Choice",
    "CorruptData",
    "Error",
    "Global",
    "HashMismatch",
    "Internal",
    "InvalidArgument",
    "InvalidHandle",
    "Io",
    "Kernel",
    "KpackArchive",
    "KpackEntry",
    "LibraryError",
    "LibraryNotFound",
    "LibraryTooOld",
    "LimitExceeded",
    "LogLevel",
    "Malformed",
    "NotFound",
    "NullArgument",
    "Options",
    "OutOfBounds",
    "OutOfMemory",
    "Overflow",
    "Registry",
    "Selection",
    "SizeMismatch",
    "Status",
    "Tier",
    "Truncated",
    "UnsupportedMethod",
    "UnsupportedVersion",
    "check",
    "devices",
    "has_function",
    "kpack_archive",
    "kpack_extract",
    "library_path",
    "select",
    "version",
]
