#!/usr/bin/env bash
# Issue 27's whole-process targets on the realistic CCOBs (generate_inputs.sh:
# realistic_v2.ccob from clang-offload-bundler-19 -compress, realistic_v3.ccob
# from clang-offload-bundler-22 --compress): the first verified
# `coload extract --target` of the last entry against the bundler's
# --unbundle of it (no hash check) and against `zstd -d -c payload | md5sum`;
# coload with COLOAD_HASH_CHECK=skip and with a verified mark; and the peak
# RSS of the verified extract against the frame's window + the entry + 8 MiB.
#
#   first_check.sh INPUTS COLOAD [ROUNDS] [COLOAD_BEFORE]
#
# Times come from coload_interleave (beside COLOAD's build: BUILD/bench),
# every command run in turn once per round, medians of ROUNDS (default 15).
# COLOAD_BEFORE, another `coload` binary, is timed in the same rounds. Peak
# RSS from coload_stream_rss (growth over one verified selection) and GNU
# time's %M (KiB).
set -euo pipefail

if [[ $# -lt 2 || $# -gt 4 ]]; then
  echo "usage: $0 INPUTS COLOAD [ROUNDS] [COLOAD_BEFORE]" >&2
  exit 2
fi
IN=$(cd "$1" && pwd)
COLOAD=$(realpath "$2")
ROUNDS=${3:-15}
BEFORE=${4:+$(realpath "$4")}
BUILD=$(dirname "$(dirname "$(dirname "$COLOAD")")")
INTERLEAVE=${INTERLEAVE:-$BUILD/bench/coload_interleave}
STREAM_RSS=${STREAM_RSS:-$BUILD/bench/coload_stream_rss}
BUNDLER19=${BUNDLER19:-$(command -v clang-offload-bundler-19)}
BUNDLER22=${BUNDLER22:-$(command -v clang-offload-bundler-22)}
ZSTD=$(command -v zstd)
MD5SUM=$(command -v md5sum)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export COLOAD_VERIFY_CACHE=off

[[ -x $INTERLEAVE && -x $STREAM_RSS ]] ||
  { echo "no $INTERLEAVE or $STREAM_RSS (build coload_interleave coload_stream_rss)" >&2; exit 1; }
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
median_of() { sed -n "s/^$1: median \([0-9.]*\) us.*/\1/p" "$TMP/times"; }

for v in 2 3; do
  ccob=$IN/realistic_v$v.ccob
  [[ -f $ccob ]] || { echo "no $ccob (run generate_inputs.sh)" >&2; exit 1; }
  header=$((v == 2 ? 24 : 32))
  tail -c +$((header + 1)) "$ccob" >"$TMP/payload.zst"
  # The table's last entry: the last one the stream brings (the bundlers
  # lay entries out in table order).
  id=$("$COLOAD" ls "$ccob" | awk '$1 == "entry" { id = $3 } END { print id }')
  content=$("$ZSTD" -d -c "$TMP/payload.zst" | wc -c)
  window=$("$ZSTD" -lv "$TMP/payload.zst" 2>/dev/null | sed -n 's/.*Window Size: .*(\([0-9,]*\) B).*/\1/p' | tr -d ,)
  # The bundler of the CCOB's version: 19 cannot read v3.
  bundler=$BUNDLER19
  ((v == 2)) || bundler=$BUNDLER22
  # Each side must work, and write the same bytes, before it is timed.
  "$COLOAD" extract --target "$id" -o "$TMP/c.co" "$ccob" >/dev/null
  "$bundler" --unbundle --type=o --targets="$id" --input="$ccob" --output="$TMP/b.co"
  cmp -s "$TMP/c.co" "$TMP/b.co" || { echo "coload and the bundler extracted different bytes ($ccob)" >&2; exit 1; }
  entry=$(stat -c %s "$TMP/c.co")
  marks=$TMP/marks.$v
  COLOAD_VERIFY_CACHE=$marks "$COLOAD" extract --target "$id" -o "$TMP/m.co" "$ccob" >/dev/null
  cmds=(
    -- "$COLOAD" extract --target "$id" -o "$TMP/c.co" "$ccob"
    -- "$bundler" --unbundle --type=o --targets="$id" --input="$ccob" --output="$TMP/b.co"
    -- /bin/sh -c "'$ZSTD' -q -d -c '$TMP/payload.zst' | '$MD5SUM'"
    -- /usr/bin/env COLOAD_HASH_CHECK=skip "$COLOAD" extract --target "$id" -o "$TMP/s.co" "$ccob"
    -- /usr/bin/env COLOAD_VERIFY_CACHE="$marks" "$COLOAD" extract --target "$id" -o "$TMP/m.co" "$ccob"
  )
  if [[ -n $BEFORE ]]; then
    COLOAD_VERIFY_CACHE=$marks.before "$BEFORE" extract --target "$id" -o "$TMP/mb.co" "$ccob" >/dev/null
    cmds+=(
      -- "$BEFORE" extract --target "$id" -o "$TMP/cb.co" "$ccob"
      -- /usr/bin/env COLOAD_HASH_CHECK=skip "$BEFORE" extract --target "$id" -o "$TMP/sb.co" "$ccob"
      -- /usr/bin/env COLOAD_VERIFY_CACHE="$marks.before" "$BEFORE" extract --target "$id" -o "$TMP/mb.co" "$ccob"
    )
  fi
  "$INTERLEAVE" "$ROUNDS" "${cmds[@]}" >"$TMP/times"
  peak=$(rss "$COLOAD" extract --target "$id" -o "$TMP/c.co" "$ccob")
  # In process: the growth of peak RSS over one verified selection for the
  # entry's processor (the input mapped before it).
  growth=$("$STREAM_RSS" "$ccob" "${id#*--}" verify | sed -n 's/.*growth_KiB \([0-9]*\).*/\1/p')
  echo "# realistic_v$v.ccob: $(stat -c %s "$ccob") bytes, content $content bytes, window $window; last entry $id ($entry bytes)"
  echo "# wall, median of $ROUNDS interleaved rounds (us)"
  names=("coload verify (first check)" "$(basename "$bundler") --unbundle" "zstd -d | md5sum" "coload skip" "coload marked"
    "before: verify" "before: skip" "before: marked")
  for i in "${!names[@]}"; do
    t=$(median_of "$i")
    [[ -n $t ]] && printf '%-30s %10s\n' "${names[$i]}" "$t"
  done
  echo "coload verify / bundler:         $(ratio "$(median_of 0)" "$(median_of 1)")  (target <= 0.95)"
  echo "coload verify / zstd | md5sum:   $(ratio "$(median_of 0)" "$(median_of 2)")  (target <= 1.1)"
  if [[ -n $BEFORE ]]; then
    echo "verify, after / before:          $(ratio "$(median_of 0)" "$(median_of 5)")"
    echo "skip, after / before:            $(ratio "$(median_of 3)" "$(median_of 6)")"
    echo "marked, after / before:          $(ratio "$(median_of 4)" "$(median_of 7)")"
  fi
  limit=$(((window + entry) / 1024 + 8192))
  echo "window + entry + 8 MiB:          $limit KiB (window $window bytes)"
  echo "verified selection, RSS growth:  $growth KiB (coload_stream_rss)"
  verdict="within the limit"
  ((peak <= limit)) || verdict="OVER the limit"
  echo "verified extract, peak RSS:      $peak KiB (whole process, the input mapped: $verdict)"
done
