#!/usr/bin/env python3
"""An AITER-like kernel registry over coload (docs/python.md, "The example").

Frameworks such as AITER ship hand-written kernels as bare code objects, one
folder per architecture (hsa/gfx942/*.co, hsa/gfx950/*.co), pick the folder
by the device's name and check neither the target nor the LDS before
loading. Here the whole tree is one coload binary: coload picks each
device's code objects by their ELF targets (native, then the generic
family), loads the kernel asked for, refuses a dispatch whose static plus
dynamic LDS does not fit the device (with the reason), and says what a
launch must pass.

    kernel_registry.py --device gfx942 [--runtime dry-run|hsa|hip] [--dynamic-lds N] FOLDER KERNEL

Exit status: 0 when the kernel loads and the dispatch fits, 1 when coload
refuses it (the reason on stdout), 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import sys

import coload


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--device", required=True, help="a target ID (gfx942, gfx90a:xnack-)")
    parser.add_argument("--runtime", choices=("dry-run", "hsa", "hip"), default="dry-run")
    parser.add_argument("--dynamic-lds", type=int, default=0, metavar="N", help="bytes of dynamic LDS")
    parser.add_argument("folder", help="per-architecture code objects (hsa/<arch>/*.co)")
    parser.add_argument("kernel", help="the kernel's symbol name")
    return parser.parse_args(argv)


def device_index(registry: coload.Registry, device: str) -> int:
    """The runtime's device named `device`: exactly, or by its processor."""
    names = registry.devices()
    for index, name in enumerate(names):
        if device in (name, name.split(":")[0]):
            return index
    raise coload.NotFound(f"no device {device} among {', '.join(names)}", coload.Status.NOT_FOUND, "not_found")


def run(arguments: argparse.Namespace) -> int:
    """Loads the kernel on the device and checks the dispatch; prints what it found."""
    dry_run = arguments.runtime == "dry-run"
    # The refusals are this program's answers (printed below): the registry's own warnings would repeat them.
    with coload.Registry(
        runtime=arguments.runtime, devices=arguments.device if dry_run else None, log_level="error"
    ) as registry:
        device = 0 if dry_run else device_index(registry, arguments.device)
        print(f"device: {registry.device_name(device)}")
        kernels = registry.register_directory(arguments.folder, "*.co", recursive=True)
        kernel = registry.lookup_kernel(kernels, device, arguments.kernel)
        print(f"kernel: {kernel.name}")
        print(f"LDS: {kernel.group_segment_size} static + {arguments.dynamic_lds} dynamic bytes")
        registry.check_dispatch(
            kernels, device, kernel.name, kernel.explicit_kernarg_size, dynamic_lds=arguments.dynamic_lds
        )
        print(
            f"launch: {kernel.explicit_kernarg_size} bytes of arguments"
            f" ({kernel.kernarg_segment_size}-byte kernarg segment, align {kernel.kernarg_segment_align})"
        )
    return 0


def main(argv: list[str]) -> int:
    """Runs the example; coload's refusals are its answers, not crashes."""
    arguments = parse_arguments(argv)
    try:
        return run(arguments)
    except coload.Error as error:
        print(f"refused: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
