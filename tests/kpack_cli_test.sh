#!/usr/bin/env bash
# coload's CLI on kpack'd install trees (build/hipk_fixtures): ls, select,
# extract and the check DIR audit, with exact lines and exit codes, and
# extract's bytes against the original images'.
#   kpack_cli_test.sh COLOAD HIPK_FIXTURE_DIR
set -u
COLOAD=$1
ROOT=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
# expect_line NAME PATTERN: some line of $out is exactly PATTERN.
expect_line() { grep -qxF -- "$2" <<<"$out" || fail "$1: no line '$2' in:"$'\n'"$out"; }

tree=$ROOT/zstd-per-kernel/consistent
out=$("$COLOAD" ls "$tree/.kpack/consistent_gfx942.kpack" 2>&1)
expect_line "ls archive" "$tree/.kpack/consistent_gfx942.kpack: kpack_archive (zstd-per-kernel, group consistent, targets gfx942), 6 bundles"
expect_line "ls archive key" "bundle 1: consistent/lib/libconsistent.so#1 (binary consistent/lib/libconsistent.so, code object 1) kpack"

out=$("$COLOAD" ls "$tree/lib/libconsistent.so" 2>&1)
grep -q "^$tree/lib/libconsistent.so: host_image, kpack'd: 3 bundles (HIPK wrappers); archives: " <<<"$out" ||
  fail "ls image: header: $out"

# Every wrapper, every device: the kpack'd image's code object is the original's.
for device in gfx90a gfx942 gfx1100; do
  for bundle in 0 1 2; do
    "$COLOAD" extract --device "$device" --bundle "$bundle" -o "$WORK/packed.co" "$tree/lib/libconsistent.so" ||
      fail "extract $device $bundle from the kpack'd image"
    "$COLOAD" extract --device "$device" --bundle "$bundle" -o "$WORK/orig.co" \
      "$ROOT/orig/consistent/lib/libconsistent.so" || fail "extract $device $bundle from the original"
    cmp -s "$WORK/packed.co" "$WORK/orig.co" || fail "extract $device $bundle: bytes differ from the original's"
  done
done

# The packer's numbering defect: refused, naming the counts, exit 1.
out=$("$COLOAD" extract --device gfx90a --bundle 0 -o "$WORK/x.co" "$ROOT/none/mixed_targets/lib/libmixed_targets.so" 2>&1)
status=$?
[[ $status == 1 ]] || fail "extract mixed_targets: exit $status"
grep -q "ambiguous: mixed/lib/libmixed_targets.so has 2 code objects for target gfx90a" <<<"$out" ||
  fail "extract mixed_targets: $out"
[[ ! -e $WORK/x.co ]] || fail "extract mixed_targets wrote a code object"

# The audit.
out=$("$COLOAD" check "$tree")
status=$?
[[ $status == 0 ]] || fail "check consistent: exit $status"
expect_line "check consistent" "$tree: 2 kpack'd binaries, 3 archives: ok"
expect_line "check consistent gfx90a" "  gfx90a: every wrapper has code"
out=$("$COLOAD" check "$ROOT/none/mixed_targets")
status=$?
[[ $status == 1 ]] || fail "check mixed_targets: exit $status"
expect_line "check mixed gfx90a nothing" "  gfx90a: no code for 1 wrapper: 2"
expect_line "check mixed gfx90a ambiguous" "  gfx90a: only ambiguous code for 2 wrappers: 0-1"
cp -r "$tree" "$WORK/tree"
rm "$WORK/tree/.kpack/consistent_gfx942.kpack"
cp "$ROOT/none/mixed_targets/.kpack/mixed_gfx90a.kpack" "$WORK/tree/.kpack/stale_gfx90a.kpack"
out=$("$COLOAD" check "$WORK/tree")
status=$?
[[ $status == 1 ]] || fail "check edited tree: exit $status"
expect_line "check stale archive" "archive $WORK/tree/.kpack/stale_gfx90a.kpack gives no kpack'd binary of the tree code"
printf 'KPAK\x01\x00\x00\x00\xff\xff\x00\x00\x00\x00\x00\x00' >"$WORK/tree/.kpack/broken_gfx1030.kpack"
out=$("$COLOAD" check "$WORK/tree")
grep -q "^unreadable archive: $WORK/tree/.kpack/broken_gfx1030.kpack: toc_offset 0xffff is not inside the file" <<<"$out" ||
  fail "check broken archive: $out"

# ROCM_KPACK_DISABLE: no archive is read, and the refusal says why.
out=$(ROCM_KPACK_DISABLE=1 "$COLOAD" select --device gfx90a "$tree/lib/libconsistent.so" 2>&1)
grep -q "no kpack archive found for consistent/lib/libconsistent.so#0 (looked at nothing: ROCM_KPACK_DISABLE)" <<<"$out" ||
  fail "ROCM_KPACK_DISABLE: $out"

if ((failures)); then
  echo "$failures checks FAILED"
  exit 1
fi
echo "all checks passed"
