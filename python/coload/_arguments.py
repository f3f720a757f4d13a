"""Python values made C arguments, checked as Python's own APIs check them
(docs/python.md, "Arguments"): an integer outside its C type raises
OverflowError instead of wrapping, a string or path with an embedded NUL
raises ValueError instead of being cut there, a value of another type
TypeError.
"""

from __future__ import annotations

import os
from typing import Any

UINT32_MAX = 2**32 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UINT64_MAX = 2**64 - 1
SIZE_MAX = 2**64 - 1  # coload is built for 64-bit Linux


def integer(value: Any, what: str, low: int, high: int) -> int:
    """`value` when it is an int within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise OverflowError(f"{what} is {value}, outside the C type's range [{low}, {high}]")
    return value


def uint32(value: Any, what: str) -> int:
    return integer(value, what, 0, UINT32_MAX)


def int32(value: Any, what: str) -> int:
    return integer(value, what, INT32_MIN, INT32_MAX)


def uint64(value: Any, what: str) -> int:
    return integer(value, what, 0, UINT64_MAX)


def size(value: Any, what: str) -> int:
    return integer(value, what, 0, SIZE_MAX)


def text(value: str, what: str) -> bytes:
    """`value` encoded for a C string: UTF-8, no NUL inside."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if "\0" in value:
        raise ValueError(f"{what}: embedded null byte")
    return value.encode()


def path(value: str | os.PathLike[str] | bytes, what: str) -> bytes:
    """`value` encoded as the file system does (os.fsencode), no NUL inside."""
    encoded = os.fsencode(value)
    if b"\0" in encoded:
        raise ValueError(f"{what}: embedded null byte")
    return encoded


def optional_path(value: str | os.PathLike[str] | None, what: str) -> bytes | None:
    return None if value is None else path(value, what)
