"""``kpack_archive`` and ``kpack_extract``: a kpack archive's entries
(TheRock's per-target ``.kpack`` files, docs/format.md "kpack archives") and
one code object out of it, as ``coload ls`` and ``coload extract`` give them,
through coload_kpack_list and coload_kpack_extract."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

from . import _arguments as arg
from . import _library as lib
from .registry import PathLike

_SCHEMES = ("none", "zstd-per-kernel")  # coload_kpack_scheme, by value


@dataclass(frozen=True)
class KpackEntry:
    """One (binary key, target) of an archive's TOC (coload_kpack_entry)."""

    #: the key's bundle index, as ``coload ls`` numbers it.
    bundle: int
    #: "lib/librocblas.so.4#3": the binary and its code object index.
    key: str
    #: the key before its last "#".
    binary: str
    #: the number after "#"; None when the key has none.
    index: int | None
    #: the TOC's target: "gfx942", "gfx90a:xnack+", "gfx11-generic".
    target: str
    #: the bundle entry ID it is presented under.
    entry_id: str
    ordinal: int
    original_size: int
    #: file offset and size of its blob (none) or zstd frame.
    stored_offset: int
    stored_size: int


@dataclass(frozen=True)
class KpackArchive:
    """An archive's header and TOC (coload_kpack_listing)."""

    path: str
    #: "none" or "zstd-per-kernel".
    scheme: str
    group: str
    gfx_arch_family: str
    #: the targets rocm-kpack's loader trusts.
    gfx_arches: tuple[str, ...]
    #: blobs or frames the archive declares.
    code_objects: int
    entries: tuple[KpackEntry, ...]


def kpack_archive(path: PathLike) -> KpackArchive:
    """Every entry of the kpack archive at `path`, from its header and TOC
    (nothing decoded). Raises BadMagic for a file that is no archive, and the
    archive's errors (UnsupportedVersion, Malformed…) with their location."""
    encoded = arg.path(path, "path")
    out = ctypes.POINTER(lib.KpackListing)()
    lib.call("coload_kpack_list", encoded, ctypes.byref(out))
    try:
        listing = out.contents
        entries = []
        for i in range(listing.count):
            entry = listing.entries[i].contents
            entries.append(
                KpackEntry(
                    bundle=entry.bundle,
                    key=lib.decode(entry.key),
                    binary=lib.decode(entry.binary),
                    index=entry.index if entry.has_index else None,
                    target=lib.decode(entry.target),
                    entry_id=lib.decode(entry.entry_id),
                    ordinal=entry.ordinal,
                    original_size=entry.original_size,
                    stored_offset=entry.stored_offset,
                    stored_size=entry.stored_size,
                )
            )
        return KpackArchive(
            path=os.fsdecode(encoded),
            scheme=_SCHEMES[listing.scheme] if 0 <= listing.scheme < len(_SCHEMES) else str(listing.scheme),
            group=lib.decode(listing.group_name),
            gfx_arch_family=lib.decode(listing.gfx_arch_family),
            gfx_arches=tuple(lib.decode(listing.gfx_arches[i]) for i in range(listing.gfx_arch_count)),
            code_objects=listing.code_objects,
            entries=tuple(entries),
        )
    finally:
        lib.function("coload_kpack_listing_free")(out)


def kpack_extract(path: PathLike, key: str, target: str) -> bytes:
    """The code object the archive at `path` holds for binary key `key`
    ("lib/librocblas.so.4#3") and TOC target `target` ("gfx942", compared
    exactly), exactly as it was packed (a zstd frame decoded). Raises
    NotFound (``field`` "key" or "target") when it has none, and the
    archive's and the entry's errors with their location."""
    out = ctypes.POINTER(lib.KpackObject)()
    lib.call(
        "coload_kpack_extract",
        arg.path(path, "path"),
        arg.text(key, "key"),
        arg.text(target, "target"),
        ctypes.byref(out),
    )
    try:
        made = out.contents
        return ctypes.string_at(made.bytes, made.size) if made.size else b""
    finally:
        lib.function("coload_kpack_object_free")(out)
