#!/usr/bin/env bash
# The C ABI guard (docs/packaging.md): libcoload.so's exported interface, as
# abidw reads it from the library's debug information and coload/coload.h,
# against the checked-in baseline abi/libcoload.so.<major>.abi.
#   scripts/abi.sh check [BUILD_DIR]   fail on any difference (abidiff says which)
#   scripts/abi.sh update [BUILD_DIR]  rewrite the baseline, after a version change that says what changed
# BUILD_DIR (default build/) must be a build with debug information (the
# default RelWithDebInfo). The baseline records the version it was taken at;
# `update` refuses a compatible change (an addition) without a new MINOR and an
# incompatible one without a new MAJOR (which also renames the SONAME, the
# version node and the baseline).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-check}
build=$(cd "${2:-$root/build}" && pwd)
version_header=$build/include/coload/version.h
field() { sed -n "s/^#define COLOAD_VERSION_$1 \\([0-9]*\\)\$/\\1/p" "$version_header"; }
major=$(field MAJOR)
version=$major.$(field MINOR).$(field PATCH)
baseline=$root/abi/libcoload.so.$major.abi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Paths of this checkout and build are replaced, so the file is the same wherever it is made.
# The library is compiled against its layers' views of the headers
# (build/src/layers/NAME/, cmake/CodeLayers.cmake): its debug information names
# the C API's headers by that path, relative to the build directory, so abidw runs there
# and the views' paths are written as the sources'.
# The C API's headers: coload.h and those it includes, each by both paths.
header_files=()
for header in coload.h coload_kpack.h; do
  header_files+=(--header-file "$root/include/coload/$header" --header-file "src/layers/capi/coload/$header")
done
(cd "$build" && abidw --exported-interfaces-only --no-corpus-path --no-comp-dir-path --type-id-style hash \
  --drop-private-types "${header_files[@]}" --header-file "$version_header" "$build/src/libcoload.so") |
  sed -e "s#$build/#BUILD/#g" -e "s#$root/#SOURCE/#g" \
    -e "s#filepath='src/layers/[a-z_]*/coload/#filepath='SOURCE/include/coload/#g" \
    -e "s#filepath='src/layers/[a-z_]*/#filepath='SOURCE/src/#g" > "$work/current.abi"
grep -q "<class-decl name='coload_registry_options' size-in-bits" "$work/current.abi" || {
  echo "abi: $build/src/libcoload.so has no debug information for coload.h's types (build with RelWithDebInfo)"
  exit 1
}

taken_at() { sed -n 's/^<!-- coload \(.*\) -->$/\1/p' "$baseline"; }
compare() {  # abidiff's status: 0 same, bit 4 a change, bit 8 an incompatible one
  local status=0
  # abidiff reports an unreadable file and still answers 0: parse it first.
  python3 -c 'import sys, xml.etree.ElementTree as tree; tree.parse(sys.argv[1])' "$baseline" ||
    { echo "abi: $baseline is not a readable abidw file"; exit 1; }
  abidiff --no-show-locs "$baseline" "$work/current.abi" > "$work/report" || status=$?
  [ $((status & 3)) -eq 0 ] || { cat "$work/report"; echo "abi: abidiff failed ($status)"; exit 1; }
  return "$status"
}

case $mode in
  check)
    [ -f "$baseline" ] || { echo "abi: no baseline $baseline for major $major (scripts/abi.sh update)"; exit 1; }
    status=0
    compare || status=$?
    if [ "$status" -ne 0 ]; then
      cat "$work/report"
      echo "abi: the C ABI differs from $baseline (taken at coload $(taken_at))."
      echo "     If that is on purpose: raise the version in CMakeLists.txt (MINOR for an addition, MAJOR for an"
      echo "     incompatible change), rebuild, and run scripts/abi.sh update."
      exit 1
    fi
    echo "abi: libcoload.so $version matches $(basename "$baseline")"
    ;;
  update)
    if [ -f "$baseline" ]; then
      status=0
      compare || status=$?
      taken=$(taken_at)
      if [ $((status & 8)) -ne 0 ]; then
        cat "$work/report"
        echo "abi: incompatible change: raise COLOAD's MAJOR version (now $major), which starts a new baseline"
        exit 1
      fi
      if [ "$status" -ne 0 ] && [ "${taken%.*}" = "${version%.*}" ]; then
        cat "$work/report"
        echo "abi: the ABI changed but MAJOR.MINOR did not: raise MINOR for a compatible addition, MAJOR for"
        echo "     anything else (baseline taken at $taken, now $version)"
        exit 1
      fi
    fi
    mkdir -p "$(dirname "$baseline")"
    { cat "$work/current.abi"; echo "<!-- coload $version -->"; } > "$baseline"
    echo "abi: wrote $baseline (coload $version)"
    ;;
  *)
    echo "usage: scripts/abi.sh check|update [BUILD_DIR]"
    exit 2
    ;;
esac
