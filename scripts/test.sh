#!/usr/bin/env bash
# Runs every test coload has:
#   1. the normal build's ctest (unit, fixture, CLI, export, install/package and
#      corpus-replay tests), and its C ABI against the checked-in baseline;
#   2. the same suite built with AddressSanitizer + UBSan (build-asan/);
#   3. under ThreadSanitizer (build-tsan/, only these and the library are built):
#      the registry's 16-thread stress test, the zstd decoders' kept
#      mappings and the MD5 helper (coload_concurrency_test), the CLI
#      reading a host image's CCOBs on several threads (to the end, and
#      stopping at a bundle that fails), and HIP launches through the example
#      registration layer from 8 threads while a library loads and unloads;
#   4. each libFuzzer target for a short run, seeded with its corpus and the fixtures;
# and, first of all, that every C and C++ source is laid out as .clang-format
# says (clang-format-22; .clang-format-ignore lists what is left as written).
# FUZZ_SECONDS (default 30) sets the length of each fuzz run; 0 skips step 4.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-30}
compilers=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22)

echo "== source layout (clang-format-22)"
if git -C "$root" rev-parse --git-dir > /dev/null 2>&1; then
  (cd "$root" && git ls-files -z -- '*.c' '*.cpp' '*.h' | xargs -0 clang-format-22 --dry-run --Werror)
else
  (cd "$root" && find src include tools tests fuzz bench examples \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \) \
    -print0 | xargs -0 clang-format-22 --dry-run --Werror)
fi

echo "== normal build"
[ -f "$root/build/CMakeCache.txt" ] || cmake -S "$root" -B "$root/build" -G Ninja "${compilers[@]}"
cmake --build "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$jobs")
echo "== C ABI against its baseline (abi/, docs/packaging.md)"
bash "$root/scripts/abi.sh" check "$root/build"

echo "== sanitizer build (ASan + UBSan) and libFuzzer targets"
# The toolchain-built inputs are the normal build's (COLOAD_FIXTURES_FROM, cmake/Fixtures.cmake).
cmake -S "$root" -B "$root/build-asan" -G Ninja "${compilers[@]}" \
  -DCMAKE_BUILD_TYPE=Debug -DCOLOAD_SANITIZE=ON -DCOLOAD_BUILD_FUZZERS=ON -DCOLOAD_FIXTURES_FROM="$root/build"
cmake --build "$root/build-asan"
# lsan.supp: leaks inside the real ROCm libraries the no-GPU tests call, not coload's.
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS=suppressions="$root/tests/lsan.supp" \
  ctest --output-on-failure -j "$jobs")

echo "== ThreadSanitizer: registry stress test, kept decoder mappings, MD5 helper, CLI decode threads, HIP layer"
cmake -S "$root" -B "$root/build-tsan" -G Ninja "${compilers[@]}" -DCOLOAD_SANITIZE=thread
cmake --build "$root/build-tsan" --target coload_concurrency_test coload_cli hip_proof_threads
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
"$root/build-tsan/tests/coload_concurrency_test"
# Eight threads launching through the example HIP layer while a ninth loads and unloads a HIP library.
HIP_LAYER_RUNTIME=dry-run HIP_LAYER_DEVICES=gfx90a \
  "$root/build-tsan/tests/hip_proof_threads" "$root/build-tsan/tests/libhip_proof.so" 20
ccob_host="$root/build/fixtures/host/libkernels_compressed.so"
tsan_out=$(mktemp -d)
"$root/build-tsan/tools/coload/coload" select --device gfx90a "$ccob_host" > /dev/null || [ $? -eq 1 ]
"$root/build-tsan/tools/coload/coload" extract --target gfx90a -o "$tsan_out/out" "$ccob_host" > /dev/null
# Bundle 0 has no gfx942: the first take stops while the helper may still decode.
"$root/build-tsan/tools/coload/coload" extract --device gfx942 -o "$tsan_out/out" "$ccob_host" 2> /dev/null ||
  [ $? -eq 1 ]
rm -rf "$tsan_out"
unset TSAN_OPTIONS

if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzzing, ${fuzz_seconds}s per target, $jobs at a time"
  # The targets are the ones fuzz/CMakeLists.txt builds (its one-line COLOAD_FUZZ_TARGETS list).
  targets=$(sed -n 's/^set(COLOAD_FUZZ_TARGETS \(.*\))$/\1/p' "$root/fuzz/CMakeLists.txt")
  [ -n "$targets" ] || { echo "no COLOAD_FUZZ_TARGETS list in fuzz/CMakeLists.txt"; exit 1; }
  fuzz_target() {  # fuzz_target TARGET: one run, its output in build-asan/fuzz/TARGET.log
    local target=$1
    # New inputs go to the first folder; the others seed it (git keeps no empty folder).
    local seeds=("$root/build-asan/fuzz/corpus-$target")
    mkdir -p "${seeds[0]}"
    for folder in "$root/fuzz/corpus/$target" "$root/fuzz/regressions/$target" "$root/build/fixtures" \
        "$root/build/fixtures-kpack"; do
      [ -d "$folder" ] && seeds+=("$folder")
    done
    "$root/build-asan/fuzz/fuzz_$target" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$root/build-asan/fuzz/crash-$target-" -print_final_stats=0 "${seeds[@]}" \
      > "$root/build-asan/fuzz/$target.log" 2>&1
  }
  export -f fuzz_target
  export root fuzz_seconds
  # One target per core: each run still gets its full time on a core of its own.
  fuzz_status=0
  printf '%s\n' $targets | xargs -P "$jobs" -I '{}' bash -c 'fuzz_target "$1"' _ '{}' || fuzz_status=$?
  for target in $targets; do
    echo "-- $target"
    tail -n 3 "$root/build-asan/fuzz/$target.log"
  done
  [ "$fuzz_status" -eq 0 ] || { echo "a fuzz target failed: its log above, its input in build-asan/fuzz/crash-*"; exit 1; }
fi
echo "all test stages passed"
