"""``select`` and ``check``: what ``coload select`` and ``coload check
--device`` answer, for a path and a device named by its target ID.

``select`` reads one image (a bundle, a CCOB or a code object) through
coload_select, whose report is the one ``coload select`` prints; a folder,
and a host image with several bundles, go through a dry-run registry's
coload_choose, which names each choice's file (with a library that has
coload_register_directory) but judges no entries, so its report has the
choice lines only. So does a kpack archive (``KPAK``), a bundle per binary key.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from . import _arguments as arg
from . import _library as lib
from .errors import Error, Malformed, Status, error_for
from .registry import _HASH_CHECKS, Binary, Choice, PathLike, Registry, RuntimeName, _choice_of, _pick


#: A kpack archive's first bytes (docs/format.md, "kpack archives"): coload_select takes one image only.
_KPACK_MAGIC = b"KPAK"


@dataclass(frozen=True)
class Selection:
    """What a device would load from a path: a choice per bundle and the report."""

    device: str
    choices: tuple[Choice, ...]
    #: as ``coload select`` prints it: the device, each bundle's choice (and, for one image, every entry judged).
    report: str

    @property
    def chosen(self) -> Choice:
        """The first bundle's chosen entry (``select`` raises when no bundle has one)."""
        return next(choice for choice in self.choices if choice.chosen)


def select(
    path: PathLike,
    device: str,
    *,
    ignore_environment: bool = False,
    hash_check: Literal["verify", "skip"] | None = None,
    max_decompressed_bytes: int = 0,
    extended_isa_compat: str | None = None,
    kpack_root: PathLike | None = None,
) -> Selection:
    """The entry each bundle of `path` (a file or a folder) would load on
    `device` ("gfx942", "gfx90a:xnack-", or an ISA name as ROCr gives it) and
    why. Raises the Error of the first bundle when no bundle has a fit
    (NotFound, its ``report`` set), or when `path` cannot be read."""
    arg.path(path, "path")  # os.path.isdir answers False for a path with a NUL
    if os.path.isdir(path):
        return _select_in_registry(path, device, ignore_environment, hash_check, max_decompressed_bytes,
                                   extended_isa_compat, kpack_root)
    with open(path, "rb") as file:
        image = file.read()
    if image[:4] == _KPACK_MAGIC:  # a kpack archive: one bundle per binary key, through a registry
        return _select_in_registry(path, device, ignore_environment, hash_check, max_decompressed_bytes,
                                   extended_isa_compat, kpack_root)
    options = lib.SelectOptions(
        struct_size=ctypes.sizeof(lib.SelectOptions),
        ignore_environment=int(ignore_environment),
        hash_check=_pick(_HASH_CHECKS, hash_check, "hash_check"),
        max_decompressed_bytes=arg.uint64(max_decompressed_bytes, "max_decompressed_bytes"),
        extended_isa_compat=None if extended_isa_compat is None else arg.text(extended_isa_compat, "extended_isa_compat"),
    )
    isas = (ctypes.c_char_p * 1)(arg.text(device, "device"))
    out = ctypes.POINTER(lib.Selection)()
    buffer = ctypes.create_string_buffer(image, len(image))
    try:
        lib.call("coload_select", buffer, len(image), isas, 1, ctypes.byref(options), ctypes.byref(out))
    except Malformed:  # a host image: its bundles through a registry
        return _select_in_registry(path, device, ignore_environment, hash_check, max_decompressed_bytes,
                                   extended_isa_compat, kpack_root)
    try:
        selected = out.contents.results[0].contents
        offset = None if selected.owned else selected.offset
        choice = _choice_of(selected, 0, os.fsdecode(path), offset)
        result = Selection(device, (choice,), lib.decode(selected.report))
    finally:
        lib.function("coload_selection_free")(out)
    return _checked(result)


def _select_in_registry(
    path: PathLike,
    device: str,
    ignore_environment: bool,
    hash_check: Literal["verify", "skip"] | None,
    max_decompressed_bytes: int,
    extended_isa_compat: str | None,
    kpack_root: PathLike | None,
) -> Selection:
    with Registry(
        runtime="dry-run",
        devices=device,
        ignore_environment=ignore_environment,
        hash_check=hash_check,
        max_decompressed_bytes=max_decompressed_bytes,
        extended_isa_compat=extended_isa_compat,
        kpack_root=kpack_root,
    ) as registry:
        binary = _register(registry, path)
        choices = registry.choose(binary, 0)
        lines = [f"device {registry.device_name(0)}"]
        file_set = os.path.isdir(path)  # as `coload select`: only a file set's choices say their file
        for choice in choices:
            if choice.chosen:
                tier = choice.tier.name.lower() if choice.tier is not None else "-"
                source = f" from {choice.file}" if choice.file and file_set else ""
                lines.append(f"bundle {choice.bundle}: selected {choice.entry_id} ({tier}){source}")
            else:
                lines.append(f"bundle {choice.bundle}: nothing selected: {choice.message}")
        return _checked(Selection(device, tuple(choices), "\n".join(lines) + "\n"))


def _checked(selection: Selection) -> Selection:
    if any(choice.chosen for choice in selection.choices):
        return selection
    first = selection.choices[0] if selection.choices else None
    error: Error = (
        error_for(first.status, first.message, lib.decode(lib.function("coload_status_string")(first.status)))
        if first
        else error_for(Status.NOT_FOUND, "no bundle", "not_found")
    )
    error.report = selection.report
    raise error


def _register(registry: Registry, path: PathLike) -> Binary:
    if os.path.isdir(path):
        return registry.register_directory(path, recursive=True)
    return registry.register_file(path)


def check(
    path: PathLike,
    device: str | int,
    *,
    runtime: RuntimeName = "dry-run",
    extended_isa_compat: str | None = None,
    ignore_environment: bool = False,
) -> None:
    """Whether `path` (a file, or a folder read recursively) loads on
    `device`: chosen, validated (descriptor against metadata, kernarg
    layout, LDS, wave size, version) and loaded, as a first lookup would.
    dry-run: `device` is a target ID ("gfx942"); hsa/hip: a device number, or
    a target ID one of the runtime's devices has (exactly, or its processor).
    Returns None when it loads; raises the Error that stopped it."""
    arg.path(path, "path")
    with Registry(
        runtime=runtime,
        devices=str(device) if runtime == "dry-run" else None,
        extended_isa_compat=extended_isa_compat,
        ignore_environment=ignore_environment,
    ) as registry:
        index = 0 if runtime == "dry-run" else _device_index(registry.devices(), device)
        registry.load(_register(registry, path), index)


def _device_index(devices: Sequence[str], device: str | int) -> int:
    if isinstance(device, int):
        return device
    for index, name in enumerate(devices):
        if name == device or name.split(":")[0] == device:
            return index
    raise error_for(
        Status.NOT_FOUND, f"no device {device!r} among the runtime's: {', '.join(devices) or 'none'}", "not_found"
    )
