"""Errors: one ``coload.Error`` subclass per ``coload_status`` (coload/coload.h).

Every failed C call raises the subclass for its status, carrying the status,
the message ``coload_last_error_message()`` gave on the calling thread right
after the call (what, where and which value) and where the error lies as
fields, from ``coload_last_error_location()``. ``LibraryError`` and its
subclasses are raised when no call could be made: the library is missing,
or too old for the function asked for.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class Status(enum.IntEnum):
    """``coload_status``; the names are ``coload_status_string``'s, upper-cased."""

    OK = 0
    INVALID_HANDLE = 1
    NULL_ARGUMENT = 2
    BAD_STRUCT_SIZE = 3
    BUFFER_TOO_SMALL = 4
    OUT_OF_MEMORY = 5
    INTERNAL = 6
    IO = 16
    TRUNCATED = 17
    BAD_MAGIC = 18
    OUT_OF_BOUNDS = 19
    OVERFLOW = 20
    LIMIT_EXCEEDED = 21
    UNSUPPORTED_VERSION = 22
    UNSUPPORTED_METHOD = 23
    HASH_MISMATCH = 24
    SIZE_MISMATCH = 25
    CORRUPT_DATA = 26
    MALFORMED = 27
    NOT_FOUND = 28
    AMBIGUOUS = 29
    INVALID_ARGUMENT = 30


class Error(Exception):
    """A coload call failed.

    ``status`` is the ``coload_status`` (a ``Status`` when this package knows
    the value, else the plain int a newer library returned; None for a
    ``LibraryError``), ``status_name`` its name ("not_found"), ``message``
    the library's message. ``report`` is the selection report when the error
    comes from ``coload.select`` (else "").

    Where the error lies, as ``coload_error_location`` gives it (each None
    when the error does not say, or the library predates the call): ``file``
    (the file, or the name a binary was registered under), ``bundle`` (its
    index in the file), ``bundle_offset``, ``entry`` (its index in the
    bundle's table), ``entry_id``, ``field`` (the field at fault,
    "uncompressed_size"), ``offset`` (the field's byte offset in its
    structure), ``value`` (the value found there) and ``limit`` (the limit it
    passes).
    """

    def __init__(
        self,
        message: str,
        status: int | None = None,
        status_name: str = "library",
        location: Mapping[str, str | int] | None = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        self.status: int | None = status
        self.status_name: str = status_name
        self.report: str = ""
        where = location or {}
        self.file: str | None = _text(where.get("file"))
        self.bundle: int | None = _number(where.get("bundle"))
        self.bundle_offset: int | None = _number(where.get("bundle_offset"))
        self.entry: int | None = _number(where.get("entry"))
        self.entry_id: str | None = _text(where.get("entry_id"))
        self.field: str | None = _text(where.get("field"))
        self.offset: int | None = _number(where.get("offset"))
        self.value: int | None = _number(where.get("value"))
        self.limit: int | None = _number(where.get("limit"))

    def __str__(self) -> str:
        return f"{self.status_name}: {self.message}"


def _text(value: str | int | None) -> str | None:
    return value if isinstance(value, str) and value else None


def _number(value: str | int | None) -> int | None:
    return value if isinstance(value, int) else None


class InvalidHandle(Error):
    """COLOAD_ERROR_INVALID_HANDLE: not a registry (or a destroyed one)."""


class NullArgument(Error):
    """COLOAD_ERROR_NULL_ARGUMENT."""


class BadStructSize(Error):
    """COLOAD_ERROR_BAD_STRUCT_SIZE: the library expects a larger struct."""


class BufferTooSmall(Error):
    """COLOAD_ERROR_BUFFER_TOO_SMALL."""


class OutOfMemory(Error):
    """COLOAD_ERROR_OUT_OF_MEMORY."""


class Internal(Error):
    """COLOAD_ERROR_INTERNAL: a bug in coload; the message says where."""


class Io(Error):
    """COLOAD_ERROR_IO: a file could not be opened, mapped or read."""


class Truncated(Error):
    """COLOAD_ERROR_TRUNCATED."""


class BadMagic(Error):
    """COLOAD_ERROR_BAD_MAGIC: no bundle, CCOB or code object starts there."""


class OutOfBounds(Error):
    """COLOAD_ERROR_OUT_OF_BOUNDS."""


class Overflow(Error):
    """COLOAD_ERROR_OVERFLOW."""


class LimitExceeded(Error):
    """COLOAD_ERROR_LIMIT_EXCEEDED: e.g. static + dynamic LDS above the device's."""


class UnsupportedVersion(Error):
    """COLOAD_ERROR_UNSUPPORTED_VERSION."""


class UnsupportedMethod(Error):
    """COLOAD_ERROR_UNSUPPORTED_METHOD."""


class HashMismatch(Error):
    """COLOAD_ERROR_HASH_MISMATCH."""


class SizeMismatch(Error):
    """COLOAD_ERROR_SIZE_MISMATCH: e.g. a kernarg length a launch cannot pass."""


class CorruptData(Error):
    """COLOAD_ERROR_CORRUPT_DATA."""


class Malformed(Error):
    """COLOAD_ERROR_MALFORMED: the headers or metadata make no sense."""


class NotFound(Error):
    """COLOAD_ERROR_NOT_FOUND: no fit, unknown kernel, unknown binary, no GPU."""


class Ambiguous(Error):
    """COLOAD_ERROR_AMBIGUOUS."""


class InvalidArgument(Error):
    """COLOAD_ERROR_INVALID_ARGUMENT: e.g. a device out of range, a bad device spec."""


class LibraryError(Error):
    """libcoload.so.0 could not be used; ``status`` is None."""


class LibraryNotFound(LibraryError):
    """libcoload.so.0 could not be opened (see ``coload.library_path``)."""


class LibraryTooOld(LibraryError):
    """The opened libcoload.so.0 lacks a function this call needs."""


ERROR_CLASSES: dict[int, type[Error]] = {
    Status.INVALID_HANDLE: InvalidHandle,
    Status.NULL_ARGUMENT: NullArgument,
    Status.BAD_STRUCT_SIZE: BadStructSize,
    Status.BUFFER_TOO_SMALL: BufferTooSmall,
    Status.OUT_OF_MEMORY: OutOfMemory,
    Status.INTERNAL: Internal,
    Status.IO: Io,
    Status.TRUNCATED: Truncated,
    Status.BAD_MAGIC: BadMagic,
    Status.OUT_OF_BOUNDS: OutOfBounds,
    Status.OVERFLOW: Overflow,
    Status.LIMIT_EXCEEDED: LimitExceeded,
    Status.UNSUPPORTED_VERSION: UnsupportedVersion,
    Status.UNSUPPORTED_METHOD: UnsupportedMethod,
    Status.HASH_MISMATCH: HashMismatch,
    Status.SIZE_MISMATCH: SizeMismatch,
    Status.CORRUPT_DATA: CorruptData,
    Status.MALFORMED: Malformed,
    Status.NOT_FOUND: NotFound,
    Status.AMBIGUOUS: Ambiguous,
    Status.INVALID_ARGUMENT: InvalidArgument,
}


def known_status(status: int) -> int:
    """`status` as a Status when this package knows the value, else the int."""
    return Status(status) if status in Status._value2member_map_ else status


def error_for(
    status: int, message: str, status_name: str, location: Mapping[str, str | int] | None = None
) -> Error:
    """The exception for a failed call's ``status`` (Error for a value this
    package does not know), located where ``location`` says (names of
    ``Error``'s location attributes to their values; the ones left out are None)."""
    return ERROR_CLASSES.get(status, Error)(message, known_status(status), status_name, location)
