#!/usr/bin/env python3
"""Checks that src/'s folders stay layered (docs/architecture.md, "Layers").

The layers and what each may reach come from the manifest CMake writes
(build/src/layers.txt, cmake/CodeLayers.cmake):

  check_layers.py calls --nm NM --manifest M LAYER=OBJ,OBJ... ...
      fails when an object uses a symbol defined only in a layer its own does
      not reach (a call that goes up or sideways);
  check_layers.py includes --manifest M SRC_DIR
      fails when a source in src/LAYER includes a private header of a folder,
      or a public header owned by a layer, that LAYER does not reach;
  check_layers.py tiers INCLUDE_DIR
      fails when a stable header (INCLUDE_DIR/coload/*.h) includes an
      unstable one (coload/detail/...) other than those TIER_EXCEPTIONS allows
      (docs/architecture.md, "Two tiers of C++ headers").

Prints one line per fault, naming both files, and exits 1 if there is any.
"""
import argparse
import os
import re
import subprocess
import sys


def read_manifest(path):
    reach, owner = {}, {}
    with open(path) as manifest:
        for line in manifest:
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            kind, layer, rest = words[0], words[1], words[2:]
            if kind == "reach":
                reach[layer] = set(rest)
            elif kind == "owns":
                for header in rest:
                    owner[header] = layer
    return reach, owner


def strong_definitions_and_uses(nm, objects):
    """{symbol: layer that defines it} and [(layer, object, symbol used)]."""
    defined, used = {}, []
    for layer, paths in objects.items():
        for path in paths:
            out = subprocess.run([nm, "-P", path], check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                fields = line.split()
                if len(fields) < 2:
                    continue
                symbol, kind = fields[0], fields[1]
                if kind == "U":
                    used.append((layer, path, symbol))
                elif kind in "TDBR":  # weak (inline, template) definitions live everywhere
                    defined.setdefault(symbol, layer)
    return defined, used


def check_calls(args):
    reach, _ = read_manifest(args.manifest)
    objects = {}
    for spec in args.layers:
        layer, _, paths = spec.partition("=")
        objects[layer] = [p for p in paths.split(",") if p]
    defined, used = strong_definitions_and_uses(args.nm, objects)
    faults = set()
    for layer, path, symbol in used:
        home = defined.get(symbol)
        if home is not None and home not in reach[layer]:
            faults.add(f"{os.path.basename(path)} (layer {layer}) uses {symbol}, defined in layer {home}, "
                       f"which {layer} does not reach")
    return sorted(faults)


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def check_includes(args):
    reach, owner = read_manifest(args.manifest)
    faults = []
    for layer in sorted(reach):
        folder = os.path.join(args.src, layer)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            with open(path, errors="replace") as source:
                for number, line in enumerate(source, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    included = match.group(1)
                    top = included.split("/")[0] if "/" in included else layer
                    if top == "coload":
                        home = owner.get(included.split("/", 1)[1])
                    elif top in reach:
                        home = top
                    else:
                        continue  # a third-party header
                    if home is not None and home not in reach[layer]:
                        faults.append(f"src/{layer}/{name}:{number} includes {included} (layer {home}), "
                                      f"which {layer} does not reach")
    # Every folder of src/ is a layer.
    for entry in sorted(os.listdir(args.src)):
        if os.path.isdir(os.path.join(args.src, entry)) and entry not in reach:
            faults.append(f"src/{entry} is not a layer in {args.manifest}")
    return faults


# The detail headers a stable header may include, each for a reason
# docs/architecture.md ("Two tiers of C++ headers") gives.
TIER_EXCEPTIONS = {
    ("bundle.h", "detail/source.h"),  # scan_bundles and read_bundle take a SourceReader
    ("fat_binary.h", "detail/source.h"),  # a FatBinary holds its Sources by value
}


def check_tiers(args):
    faults = []
    folder = os.path.join(args.include, "coload")
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        with open(path, errors="replace") as header:
            for number, line in enumerate(header, 1):
                match = INCLUDE.match(line)
                if not match or not match.group(1).startswith("coload/detail/"):
                    continue
                included = match.group(1).split("/", 1)[1]
                if (name, included) not in TIER_EXCEPTIONS:
                    faults.append(f"include/coload/{name}:{number} includes coload/{included}, "
                                  "an unstable header, into the stable tier")
    return faults


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    calls = sub.add_parser("calls")
    calls.add_argument("--nm", required=True)
    calls.add_argument("--manifest", required=True)
    calls.add_argument("layers", nargs="+")
    includes = sub.add_parser("includes")
    includes.add_argument("--manifest", required=True)
    includes.add_argument("src")
    tiers = sub.add_parser("tiers")
    tiers.add_argument("include")
    args = parser.parse_args()
    check = {"calls": check_calls, "includes": check_includes, "tiers": check_tiers}[args.mode]
    faults = check(args)
    for fault in faults:
        print(fault, file=sys.stderr)
    if faults:
        print(f"{len(faults)} layer fault(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
