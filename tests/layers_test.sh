#!/usr/bin/env bash
# The layers of src/ (docs/architecture.md, "Layers"): the tree as it is
# passes the include check, and each of the three guards refuses a planted
# fault: an include that reaches up, a call that reaches up (nm over two
# objects) and a layer that uses one declared after it (CMake). The two
# tiers of headers ("Two tiers of C++ headers"): no stable header includes
# an unstable one beyond the exceptions, and a planted include is refused.
#
#   layers_test.sh SOURCE_DIR MANIFEST C_COMPILER NM
set -uo pipefail
source_dir=$1
manifest=$2
cc=$3
nm=$4
check="$source_dir/scripts/check_layers.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# expect_fault NAME EXPECTED_LINE COMMAND...: the command exits 1 and prints EXPECTED_LINE.
expect_fault() {
  local name=$1 expected=$2; shift 2
  local out status
  out=$("$@" 2>&1); status=$?
  [ "$status" -eq 1 ] || fail "$name: exit $status, not 1: $out"
  grep -qxF -- "$expected" <<< "$out" || fail "$name: no line '$expected' in: $out"
}

python3 "$check" includes --manifest "$manifest" "$source_dir/src" || fail "the tree has an include that reaches up"

cp -r "$source_dir/src" "$work/src"
# plant_upward_include NAME FILE HEADER LAYER: FILE (under src/, of LAYER)
# including HEADER of the registry layer is refused with its line; then undone.
plant_upward_include() {
  local name=$1 file=$2 header=$3 layer=$4
  local line=$(($(wc -l < "$work/src/$file") + 1))
  echo "#include \"$header\"" >> "$work/src/$file"
  expect_fault "$name" "src/$file:$line includes $header (layer registry), which $layer does not reach" \
    python3 "$check" includes --manifest "$manifest" "$work/src"
  cp "$source_dir/src/$file" "$work/src/$file"
}
plant_upward_include "private header" common/bytes.h registry/registry_state.h common
plant_upward_include "public header" io/source.cpp coload/registry.h io
mkdir "$work/src/stray"
expect_fault "folder outside the layers" "src/stray is not a layer in $manifest" \
  python3 "$check" includes --manifest "$manifest" "$work/src"

python3 "$check" tiers "$source_dir/include" || fail "a stable header includes an unstable one"
cp -r "$source_dir/include" "$work/include"
line=$(($(wc -l < "$work/include/coload/config.h") + 1))
echo '#include "coload/detail/stream_select.h"' >> "$work/include/coload/config.h"
expect_fault "stable header" \
  "include/coload/config.h:$line includes coload/detail/stream_select.h, an unstable header, into the stable tier" \
  python3 "$check" tiers "$work/include"

# A call that reaches up: lower.o (layer io) calls upper(), defined in upper.o
# (layer registry), which calls lower() (down).
echo 'int upper(void); int lower(void) { return upper(); }' > "$work/lower.c"
echo 'int lower(void); int upper(void) { return 1; } int other(void) { return lower(); }' > "$work/upper.c"
"$cc" -c "$work/lower.c" -o "$work/lower.o" && "$cc" -c "$work/upper.c" -o "$work/upper.o" || fail "cannot compile"
expect_fault "call" "lower.o (layer io) uses upper, defined in layer registry, which io does not reach" \
  python3 "$check" calls --nm "$nm" --manifest "$manifest" "io=$work/lower.o" "registry=$work/upper.o"
# upper.o's call down to lower() is not a fault: one fault in all.
expect_fault "call down" "1 layer fault(s)" \
  python3 "$check" calls --nm "$nm" --manifest "$manifest" "io=$work/lower.o" "registry=$work/upper.o"

# A layer that uses one declared after it: CMake stops at configure time.
mkdir -p "$work/project/src/low" "$work/project/src/high"
cat > "$work/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(circle LANGUAGES C)
list(APPEND CMAKE_MODULE_PATH "$source_dir/cmake")
include(CodeLayers)
coload_layer(low SOURCES "$work/lower.c" USES high)
coload_layer(high SOURCES "$work/upper.c" USES low)
CMAKE
expect_fault "circle" "  layer low uses high, which is not declared below it" \
  cmake -S "$work/project" -B "$work/project/build" -G Ninja -DCMAKE_C_COMPILER="$cc"

[ "$failed" -eq 0 ] && echo "PASS"
exit "$failed"
