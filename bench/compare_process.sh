#!/usr/bin/env bash
# Whole-process comparison: `coload extract` against
# `clang-offload-bundler-22 -unbundle`, and peak memory (RSS) of selecting
# from a compressed bundle against the size of the chosen entry.
#
#   compare_process.sh INPUTS COLOAD [RUNS]
#
# INPUTS is generate_inputs.sh's output directory, COLOAD the `coload` CLI
# (BUILD/tools/coload/coload). Times come from hyperfine when it is installed
# (`-N`, no shell; mean of RUNS runs after 3 warm-ups), otherwise from a bash
# loop over `date +%s%N` (median of RUNS). Peak RSS comes from
# `/usr/bin/time -f %M` (GNU time, KiB).
#
# What the bundler can read: it finds bundles in an ELF input only in
# sections named `__CLANG_OFFLOAD_BUNDLE__<id>` (unlinked host objects), so on
# a linked host library (.hip_fatbin, one bundle per TU) it finds nothing
# ("Can't find bundles"). It is therefore timed on one TU's bundle file
# (parts/tu_000.hipfb: one bundle) and, to do the same work as coload, once
# per bundle file over all of them. coload reads the host image itself and
# extracts the gfx90a entry of every one of its bundles (writing one file per
# bundle, OUT.N: file creation dominates that row on a slow disk), and
# `coload select` without -o reads and selects in every bundle, writing nothing.
#
# What a user of the toolchain does with a host image instead: dump the
# section (`llvm-objcopy --dump-section=.hip_fatbin=FILE IMAGE /dev/null`; the
# output image goes to /dev/null, without one objcopy rewrites IMAGE in place)
# and hand FILE to the bundler, which reads the first bundle of the dump only
# (checked: its output is byte-identical to coload's gfx90a entry of bundle 0).
# Timed as one `sh -c` pipeline (the shell's own start-up included) and the
# bundler alone on the dump.
#
# The headline ratio (the pipeline vs `coload select`) is also timed in
# ROUNDS (11) paired rounds, the two sides back to back, and reported as
# their median.
#
# Verified marks (COLOAD_VERIFY_CACHE): every coload row checks CCOB hashes in
# full, as a first run on a machine does, except coload_image_compressed_marked
# and the marked RSS rows, which use marks from a run before them (a later run).
#
# The process floor: /bin/true, and the cheapest coload run (`coload help`,
# start-up and exit only). No process can take less than the floor, so no
# ratio against a peer can exceed peer / floor; the script prints that bound.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 INPUTS COLOAD [RUNS]" >&2
  exit 2
fi
IN=$(cd "$1" && pwd)
COLOAD=$(realpath "$2")
RUNS=${3:-20}
BUNDLER=${BUNDLER:-clang-offload-bundler-22}
OBJCOPY=${OBJCOPY:-llvm-objcopy-22}
ROUNDS=${ROUNDS:-11}  # paired rounds for the headline ratio (odd: the median is a round)
TRUE=${TRUE:-/bin/true}  # the process floor (a binary: hyperfine -N runs no shell built-in)
TARGET=gfx90a
ID=hipv4-amdgcn-amd-amdhsa--$TARGET
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export COLOAD_VERIFY_CACHE=off
MARKS=$TMP/marks

[[ -f $IN/inputs.tsv ]] || { echo "$IN has no inputs.tsv (run generate_inputs.sh)" >&2; exit 1; }
BUNDLES=$(awk -F'\t' '$1 == "host_plain" { print $3 }' "$IN/inputs.tsv")

# The bundler over every bundle file of the image, one process each.
cat >"$TMP/bundler_all.sh" <<EOF
#!/usr/bin/env bash
for f in "$IN"/parts/tu_*.hipfb; do
  "$BUNDLER" -unbundle -type=o -targets=$ID -input="\$f" -output="$TMP/b_all.co" || exit 1
done
EOF
chmod +x "$TMP/bundler_all.sh"

# The user's pipeline on the host image: dump .hip_fatbin, unbundle the dump.
# Dumped once here too, so the bundler-alone row has its input.
"$OBJCOPY" --dump-section=.hip_fatbin="$TMP/fatbin.dump" "$IN/libbench_plain.so" /dev/null
DUMP_BYTES=$(stat -c %s "$TMP/fatbin.dump")
pipeline="\"$OBJCOPY\" --dump-section=.hip_fatbin=\"$TMP/p.dump\" \"$IN/libbench_plain.so\" /dev/null"
pipeline+=" && \"$BUNDLER\" --unbundle --type=o --targets=$ID --input=\"$TMP/p.dump\" --output=\"$TMP/p.co\""

names=(
  "floor_true"
  "coload_help"
  "coload_image_select"
  "coload_image_plain"
  "coload_image_compressed"
  "coload_image_compressed_marked"
  "coload_one_bundle"
  "bundler_one_bundle"
  "bundler_one_ccob"
  "bundler_all_bundles"
  "peer_dump_and_bundler"
  "bundler_on_dump"
)
cmds=(
  "$TRUE"
  "$COLOAD help"
  "$COLOAD select --device $TARGET $IN/libbench_plain.so"
  "$COLOAD extract --target $TARGET -o $TMP/c.co $IN/libbench_plain.so"
  "$COLOAD extract --target $TARGET -o $TMP/cc.co $IN/libbench_compressed.so"
  "env COLOAD_VERIFY_CACHE=$MARKS $COLOAD extract --target $TARGET -o $TMP/ccm.co $IN/libbench_compressed.so"
  "$COLOAD extract --target $TARGET -o $TMP/c1.co $IN/parts/tu_000.hipfb"
  "$BUNDLER -unbundle -type=o -targets=$ID -input=$IN/parts/tu_000.hipfb -output=$TMP/b1.co"
  "$BUNDLER -unbundle -type=o -targets=$ID -input=$IN/parts/tu_000.ccob -output=$TMP/b2.co"
  "$TMP/bundler_all.sh"
  "sh -c '$pipeline'"
  "$BUNDLER --unbundle --type=o --targets=$ID --input=$TMP/fatbin.dump --output=$TMP/d.co"
)
# Each command must work before it is timed. hyperfine -N splits a command as
# a shell would, quotes included; bash's word splitting does not, so the
# pipeline runs through sh -c "$pipeline" here and in the bash-loop timer.
for i in "${!cmds[@]}"; do
  if [[ ${names[$i]} == peer_dump_and_bundler ]]; then
    sh -c "$pipeline" >/dev/null || { echo "failed: $pipeline" >&2; exit 1; }
  else
    ${cmds[$i]} >/dev/null || { echo "failed: ${cmds[$i]}" >&2; exit 1; }
  fi
done
cmp -s "$TMP/c1.co" "$TMP/b1.co" || { echo "coload and the bundler extracted different bytes" >&2; exit 1; }
# The bundler on the dump reads the dump's first bundle: the same bytes as
# coload's entry of bundle 0 of the image.
"$COLOAD" extract --target $TARGET --bundle 0 -o "$TMP/c0.co" "$IN/libbench_plain.so" >/dev/null
for out in d.co p.co; do
  cmp -s "$TMP/c0.co" "$TMP/$out" ||
    { echo "the bundler on the .hip_fatbin dump ($out) and coload's bundle 0 entry differ" >&2; exit 1; }
done

declare -A MS SD  # mean and σ (hyperfine only) in ms, by name
if command -v hyperfine >/dev/null; then
  args=()
  for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  runs=$RUNS
  hyperfine -N --warmup 3 --runs "$runs" --export-json "$TMP/h.json" "${args[@]}" >"$TMP/h.txt" 2>&1 ||
    { cat "$TMP/h.txt" >&2; exit 1; }
  while IFS=$'\t' read -r name ms sd; do MS[$name]=$ms; SD[$name]=$sd; done < <(python3 - "$TMP/h.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f'{r["command"]}\t{r["mean"] * 1e3:.3f}\t{r["stddev"] * 1e3:.3f}')
PY
)
  timer="hyperfine -N, mean ± σ of $RUNS runs"
else
  for i in "${!cmds[@]}"; do
    samples=()
    for (( r = 0; r < RUNS; ++r )); do
      t0=$(date +%s%N)
      if [[ ${names[$i]} == peer_dump_and_bundler ]]; then sh -c "$pipeline" >/dev/null; else ${cmds[$i]} >/dev/null; fi
      t1=$(date +%s%N)
      samples+=($(( t1 - t0 )))
    done
    med=$(printf '%s\n' "${samples[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    MS[${names[$i]}]=$(awk -v ns="$med" 'BEGIN { printf "%.3f", ns / 1e6 }')
  done
  timer="bash loop, median of $RUNS runs"
fi

echo "# whole process ($timer); host image: $BUNDLES bundles, .hip_fatbin dump $DUMP_BYTES bytes"
for n in "${names[@]}"; do
  if [[ -n ${SD[$n]:-} ]]; then printf '%-26s %10s ms ± %s\n' "$n" "${MS[$n]}" "${SD[$n]}"
  else printf '%-26s %10s ms\n' "$n" "${MS[$n]}"; fi
done
echo "checked: the bundler on the dump writes the same bytes as coload's $TARGET entry of bundle 0"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "# ratios (bundler time / coload time; > 1: coload faster)"
echo "one bundle each:                       $(ratio "${MS[bundler_one_bundle]}" "${MS[coload_one_bundle]}")x"
echo "bundler 1 bundle vs coload $BUNDLES bundles:   $(ratio "${MS[bundler_one_bundle]}" "${MS[coload_image_plain]}")x  (issue target: >= 100x)"
echo "bundler 1 bundle vs coload select (all bundles, nothing written): $(ratio "${MS[bundler_one_bundle]}" "${MS[coload_image_select]}")x"
echo "bundler $BUNDLES processes vs coload 1 image: $(ratio "${MS[bundler_all_bundles]}" "${MS[coload_image_plain]}")x"
echo "bundler 1 ccob vs coload $BUNDLES ccobs:      $(ratio "${MS[bundler_one_ccob]}" "${MS[coload_image_compressed]}")x"
echo "the same, the ccobs marked as checked:  $(ratio "${MS[bundler_one_ccob]}" "${MS[coload_image_compressed_marked]}")x"
echo "# the user's pipeline on the host image (objcopy dump + bundler on the dump: first bundle only)"
echo "dump + bundler vs coload select:       $(ratio "${MS[peer_dump_and_bundler]}" "${MS[coload_image_select]}")x"
echo "dump + bundler vs coload extract:      $(ratio "${MS[peer_dump_and_bundler]}" "${MS[coload_image_plain]}")x"
echo "bundler on the dump vs coload select:  $(ratio "${MS[bundler_on_dump]}" "${MS[coload_image_select]}")x"
echo "bundler on the dump vs coload extract: $(ratio "${MS[bundler_on_dump]}" "${MS[coload_image_plain]}")x"
if command -v hyperfine >/dev/null; then
  # The table above times each command's runs in one block, minutes apart on
  # this kind of VM; these rounds time the two sides back to back instead,
  # so that drift between blocks does not decide the headline ratio.
  rounds=()
  for (( r = 0; r < ROUNDS; ++r )); do
    hyperfine -N --warmup 2 --runs 10 --export-json "$TMP/pair.json" \
      -n select "$COLOAD select --device $TARGET $IN/libbench_plain.so" -n pipeline "sh -c '$pipeline'" \
      >/dev/null 2>&1 || { echo "paired rounds failed" >&2; exit 1; }
    rounds+=("$(python3 -c 'import json, sys
r = {x["command"]: x["mean"] for x in json.load(open(sys.argv[1]))["results"]}
print("%.2f" % (r["pipeline"] / r["select"]))' "$TMP/pair.json")")
  done
  sorted=$(printf '%s\n' "${rounds[@]}" | sort -n | tr '\n' ' ')
  median=$(printf '%s\n' "${rounds[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  echo "dump + bundler vs coload select, $ROUNDS paired rounds of 10 runs: median ${median}x (rounds: ${sorted% })"
fi
echo "# the floor bounds every ratio: peer / floor is the most any process could reach"
echo "coload help over the floor:            $(awk -v a="${MS[coload_help]}" -v b="${MS[floor_true]}" 'BEGIN { printf "%.3f", a - b }') ms"
echo "bundler 1 bundle / floor_true:         $(ratio "${MS[bundler_one_bundle]}" "${MS[floor_true]}")x  (100x needs coload < $(awk -v a="${MS[bundler_one_bundle]}" 'BEGIN { printf "%.3f", a / 100 }') ms)"
echo "dump + bundler / floor_true:           $(ratio "${MS[peer_dump_and_bundler]}" "${MS[floor_true]}")x"

# Peak RSS: selecting gfx90a from the large compressed bundle.
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
"$COLOAD" extract --target $TARGET -o "$TMP/large.co" "$IN/large.ccob" >/dev/null
entry=$(stat -c %s "$TMP/large.co")
uncompressed=$(stat -c %s "$IN/large.hipfb")
base=$(rss "$COLOAD" extract --target $TARGET -o "$TMP/small.co" "$IN/parts/tu_000.hipfb")
sel=$(rss "$COLOAD" select --device $TARGET -o "$TMP/sel.co" "$IN/large.ccob")
ext=$(rss "$COLOAD" extract --target $TARGET -o "$TMP/large.co" "$IN/large.ccob")
bun=$(rss "$BUNDLER" -unbundle -type=o -targets=$ID -input="$IN/large.ccob" -output="$TMP/lb.co")
# Marked: the first run checks and marks large.ccob, the measured one trusts the mark.
COLOAD_VERIFY_CACHE=$MARKS "$COLOAD" select --device gfx1030 "$IN/large.ccob" >/dev/null
"$COLOAD" extract --target gfx1030 -o "$TMP/first.co" "$IN/large.ccob" >/dev/null
first_entry=$(stat -c %s "$TMP/first.co")
sel_first=$(rss "$COLOAD" select --device gfx1030 -o "$TMP/sel1.co" "$IN/large.ccob")
sel_first_marked=$(rss env COLOAD_VERIFY_CACHE="$MARKS" "$COLOAD" select --device gfx1030 -o "$TMP/sel1.co" "$IN/large.ccob")
kib() { echo $(( $1 / 1024 )); }
echo "# peak RSS, large.ccob (KiB; GNU time %M)"
echo "chosen entry ($TARGET):               $(kib "$entry")"
echo "whole uncompressed bundle:            $(kib "$uncompressed")"
echo "coload baseline (extract, 1 small plain bundle): $base"
echo "coload select -o:                     $sel  (over baseline: $(( sel - base )))"
echo "coload extract:                       $ext  (over baseline: $(( ext - base )))"
echo "bundler -unbundle:                    $bun"
echo "target: select <= entry + 8 MiB = $(( $(kib "$entry") + 8192 )) KiB over baseline -> $( (( sel - base <= $(kib "$entry") + 8192 )) && echo met || echo not met)"
echo "gfx1030 (its entry first, $(kib "$first_entry") KiB): select -o $sel_first, marked $sel_first_marked  (over baseline: $(( sel_first - base )), $(( sel_first_marked - base )))"
echo "target, marked: $( (( sel_first_marked - base <= $(kib "$first_entry") + 8192 )) && echo met || echo not met)"
