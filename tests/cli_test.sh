#!/usr/bin/env bash
# End-to-end test of the coload CLI against the toolchain-built fixtures:
# extraction byte-identical to clang-offload-bundler-22 --unbundle, valid JSON
# from `ls --json`, `select --json` and `check --json`, selection, checks and the
# documented exit codes.
set -uo pipefail
coload=$1
fixtures=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Nothing here reads or writes verified marks in the user's cache; the test of
# marks below gives its own HOME.
export COLOAD_VERIFY_CACHE=off
passed=0
failed=0
check() {  # check NAME COMMAND...: the command must succeed
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}

# Every manifest row through `coload extract --bundle N`.
while IFS=$'\t' read -r fixture bundle id expected; do
  [[ -z "$fixture" || "$fixture" == \#* ]] && continue
  out="$work/out.co"
  rm -f "$out"
  if "$coload" extract --target "$id" --bundle "$bundle" -o "$out" "$fixtures/$fixture" 2>"$work/err"; then
    check "extract $fixture#$bundle $id" cmp -s "$out" "$fixtures/$expected"
  else
    failed=$((failed + 1)); echo "FAIL: extract $fixture#$bundle $id: $(cat "$work/err")"
  fi
done < "$fixtures/manifest.tsv"

# `ls --json` on every fixture is one valid JSON document listing every bundle;
# one interpreter checks them all (one per fixture was most of this test's time).
mkdir -p "$work/ls"
ls_cases=()
while IFS=$'\t' read -r fixture kind count _; do
  [[ -z "$fixture" || "$fixture" == \#* ]] && continue
  json="$work/ls/${#ls_cases[@]}.json"
  "$coload" ls --json "$fixtures/$fixture" > "$json"
  ls_cases+=("$fixture" "$json" "$kind" "$count")
done < "$fixtures/fixtures.tsv"
ls_checked=$(python3 -c '
import json, sys
args, good = sys.argv[1:], 0
for at in range(0, len(args), 4):
    fixture, path, kind, count = args[at:at + 4]
    try:
        doc = json.load(open(path))
        assert doc["kind"] == kind, doc["kind"]
        assert len(doc["bundles"]) == int(count), len(doc["bundles"])
        for b in doc["bundles"]:
            assert b["format"] in ("plain", "ccob", "code_object") and b["error"] is None
            assert (b["version"] is None) == (b["format"] != "ccob")
            assert all(e["id"] and e["size"] >= 0 for e in b["entries"])
        good += 1
    except (AssertionError, ValueError, KeyError, TypeError) as error:
        print(f"FAIL: ls --json {fixture}: {error!r}", file=sys.stderr)
print(good, len(args) // 4 - good)
' "${ls_cases[@]}")
passed=$((passed + ${ls_checked% *}))
failed=$((failed + ${ls_checked#* }))
[ "${#ls_cases[@]}" -gt 0 ] || { failed=$((failed + 1)); echo "FAIL: fixtures.tsv lists no fixture"; }

# `ls` lists, per bundle, exactly the device entries clang-offload-bundler
# lists, each as large as what the bundler unbundles for it.
check "ls lists every bundle's entries as the bundler does" python3 -c '
import collections, json, os, subprocess, sys
coload, fixtures = sys.argv[1], sys.argv[2]
want = collections.defaultdict(dict)
for line in open(os.path.join(fixtures, "manifest.tsv")):
    if line.startswith("#") or not line.strip():
        continue
    path, bundle, entry_id, expected = line.rstrip("\n").split("\t")
    want[path].setdefault(int(bundle), {})[entry_id] = os.path.getsize(os.path.join(fixtures, expected))
for path, bundles in want.items():
    listed = subprocess.run([coload, "ls", "--json", os.path.join(fixtures, path)], capture_output=True, check=True)
    for b in json.loads(listed.stdout)["bundles"]:
        got = {e["id"]: e["size"] for e in b["entries"] if not e["host"]}
        assert got == bundles.get(b["index"], {}), (path, b["index"], got, bundles.get(b["index"]))
' "$coload" "$fixtures"

# Several files give a JSON array; text output names each file.
first=$(awk -F'\t' '!/^#/ {print $1; exit}' "$fixtures/fixtures.tsv")
"$coload" ls --json "$fixtures/$first" "$fixtures/$first" > "$work/two.json"
check "ls --json with two files is an array" python3 -c 'import json,sys; assert len(json.load(open(sys.argv[1]))) == 2' "$work/two.json"

# Without --bundle, an ID held by several bundles goes to OUT.N, one per bundle.
multi=$(awk -F'\t' '$1 == "multi/ccob_v1_zlib_ccob_v3.bin" {count[$3]++} END {for (id in count) if (count[id] > 1) {print id; exit}}' "$fixtures/manifest.tsv")
if [ -n "$multi" ]; then
  rm -f "$work"/multi.co*
  "$coload" extract --target "$multi" -o "$work/multi.co" "$fixtures/multi/ccob_v1_zlib_ccob_v3.bin" > "$work/written"
  while IFS=$'\t' read -r fixture bundle id expected; do
    [ "$fixture" = "multi/ccob_v1_zlib_ccob_v3.bin" ] && [ "$id" = "$multi" ] || continue
    check "extract without --bundle writes OUT.$bundle" cmp -s "$work/multi.co.$bundle" "$fixtures/$expected"
    check "extract prints OUT.$bundle" grep -qx "$work/multi.co.$bundle" "$work/written"
  done < "$fixtures/manifest.tsv"
  check "no plain OUT when several bundles match" test ! -e "$work/multi.co"
else
  failed=$((failed + 1)); echo "FAIL: no entry ID shared by bundles of multi/ccob_v1_zlib_ccob_v3.bin"
fi

# `select`: the chosen entry, its tier, the report, and -o byte-identical to the bundler.
features=bundles/driver_features.hipfb
"$coload" select --json --device gfx90a:sramecc+:xnack- -o "$work/sel.co" "$fixtures/$features" > "$work/sel.json"
check "select --json picks the exact xnack- entry" python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["device"] == "gfx90a:sramecc+:xnack-", doc["device"]
assert doc["unbundler"] == "builtin"
[b] = doc["bundles"]
assert b["selected"]["id"] == "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", b["selected"]
assert b["selected"]["tier"] == "native" and b["error"] is None
verdicts = {c["id"]: (c["verdict"], c["reason"]) for c in b["candidates"]}
assert verdicts["hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"] == ("rejected", "device runs with xnack-"), verdicts
assert sum(c["verdict"] == "selected" for c in b["candidates"]) == 1
' "$work/sel.json"
expected=$(awk -F'\t' -v f="$features" '$1 == f && $3 == "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-" {print $4}' "$fixtures/manifest.tsv")
check "select -o writes the bundler's bytes" cmp -s "$work/sel.co" "$fixtures/$expected"

# A compressed bundle is selected streamed; -o still writes the bundler's bytes.
ccob_v3=compressed/driver_v3.hipfb
"$coload" select --device gfx90a:sramecc+:xnack- -o "$work/ccob.co" "$fixtures/$ccob_v3" > /dev/null
expected=$(awk -F'\t' -v f="$ccob_v3" '$1 == f && $3 == "hipv4-amdgcn-amd-amdhsa--gfx90a" {print $4}' "$fixtures/manifest.tsv")
check "select -o from a CCOB writes the bundler's bytes" cmp -s "$work/ccob.co" "$fixtures/$expected"

# A host image where one bundle has nothing for the device: exit 1, the others still chosen.
"$coload" select --json --device gfx90a:xnack- "$fixtures/host/libkernels_mixed.so" > "$work/mixed.json"
check "select exits 1 when a bundle has no fit" test $? -eq 1
check "select reports each bundle of a host image" python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["bundles"]
assert [x["selected"] and x["selected"]["id"] for x in b] == ["hipv4-amdgcn-amd-amdhsa--gfx90a", None, None], b
assert b[2]["error"].endswith("nearest miss: gfx90a:xnack+ present; device runs with xnack-"), b[2]["error"]
' "$work/mixed.json"

# Same-ISA equivalence from the environment, per device processor.
COLOAD_EXTENDED_ISA_COMPAT=gfx1031 "$coload" select --json --device gfx1031 "$fixtures/bundles/driver_two_arch.hipfb" > "$work/eq.json"
check "COLOAD_EXTENDED_ISA_COMPAT opts gfx1031 into gfx1030 code" python3 -c '
import json, sys
[b] = json.load(open(sys.argv[1]))["bundles"]
assert b["selected"]["tier"] == "equivalent", b
' "$work/eq.json"
expect_exit_env() {  # expect_exit_env CODE NAME VAR=VALUE COMMAND...
  local code=$1 name=$2 assignment=$3; shift 3
  env "$assignment" "$@" >/dev/null 2>&1
  local got=$?
  if [ "$got" -eq "$code" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name: exit $got, expected $code"; fi
}
expect_exit_env 1 "gfx1031 without opt-in" COLOAD_EXTENDED_ISA_COMPAT= "$coload" select --device gfx1031 "$fixtures/bundles/driver_two_arch.hipfb"
expect_exit_env 2 "unknown COLOAD_LOG value" COLOAD_LOG=loud "$coload" select --device gfx90a "$fixtures/$features"
expect_exit_env 2 "unknown COLOAD_UNBUNDLER value" COLOAD_UNBUNDLER=both "$coload" select --device gfx90a "$fixtures/$features"

# `check`: kernels, problems and violations of a code object, alone or as selected.
"$coload" check --json --device gfx942 "$fixtures/check/lds_heavy-gfx950.co" > "$work/heavy.json"
check "check exits 1 for a gfx950 LDS object on gfx942" test $? -eq 1
check "check --json names the LDS overflow and the processor it fits (docs/loading.md)" python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["device"] == "gfx942:sramecc+:xnack-" and doc["ok"] is False, doc
[co] = doc["code_objects"]
assert co["bundle"] is None and co["error"] is None and co["code_object"]["target"] == "gfx950", co
[k] = co["code_object"]["kernels"]
assert k["name"] == "gemm_128x128" and k["group_segment_size"] == 98304 and k["wavefront_size"] == 64, k
assert [v["field"] for v in co["violations"]] == ["target", "group_segment_fixed_size"], co["violations"]
lds = co["violations"][1]
assert lds["kind"] == "limit_exceeded" and lds["value"] == 98304 and lds["limit"] == 65536, lds
assert lds["message"] == "kernel \"gemm_128x128\": group_segment_fixed_size 98304 exceeds the 65536-byte LDS of gfx942 (built for gfx950?)", lds
' "$work/heavy.json"
"$coload" check --device gfx942 "$fixtures/check/lds_heavy-gfx950.co" > "$work/heavy.txt"
check "check text prints the violation" grep -qF 'violation: kernel "gemm_128x128": group_segment_fixed_size 98304 exceeds the 65536-byte LDS of gfx942 (built for gfx950?)' "$work/heavy.txt"
"$coload" check --json "$fixtures/check/kernel_args-cov5.co" > "$work/args.json"
check "check without a device reads the object alone" python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["device"] is None and doc["ok"] is True, doc
[co] = doc["code_objects"]
[k] = co["code_object"]["kernels"]
assert (k["name"], k["explicit_size"], k["hidden_offset"]) == ("many_args", 104, 104), k
assert co["violations"] == [] and co["code_object"]["problems"] == []
' "$work/args.json"
"$coload" check --json --device gfx942 "$fixtures/check/kernel_args.hipfb" > "$work/args_fat.json"
check "check of a fat binary checks the selected entry" python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
[co] = doc["code_objects"]
assert doc["ok"] is True and co["bundle"] == 0 and co["tier"] == "native", co
assert co["id"] == "hipv4-amdgcn-amd-amdhsa--gfx942" and co["code_object"]["target"] == "gfx942", co
' "$work/args_fat.json"
"$coload" check --json --device gfx90a:xnack- "$fixtures/host/libkernels_mixed.so" > "$work/check_mixed.json"
check "check exits 1 when a bundle has nothing for the device" test $? -eq 1
check "check reports the bundles without a fit" python3 -c '
import json, sys
cos = json.load(open(sys.argv[1]))["code_objects"]
assert [c["error"] is None for c in cos] == [True, False, False], cos
assert cos[0]["ok"] and cos[2]["error"].endswith("device runs with xnack-"), cos[2]
' "$work/check_mixed.json"
# Every toolchain-built code object reads without a problem.
while IFS=$'\t' read -r fixture kind _; do
  [[ -z "$fixture" || "$fixture" == \#* || "$kind" != code_object ]] && continue
  if "$coload" check "$fixtures/$fixture" > "$work/co.txt" 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAIL: check $fixture:"; cat "$work/co.txt"
  fi
done < "$fixtures/fixtures.tsv"
expect_exit() {  # expect_exit CODE NAME COMMAND...
  local code=$1 name=$2; shift 2
  "$@" >/dev/null 2>&1
  local got=$?
  if [ "$got" -eq "$code" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name: exit $got, expected $code"; fi
}
expect_exit 0 "check a gfx950 object on gfx950" "$coload" check --device gfx950 "$fixtures/check/lds_heavy-gfx950.co"
expect_exit 1 "check with --lds below the static LDS" "$coload" check --device gfx950 --lds 65536 "$fixtures/check/lds_heavy-gfx950.co"
expect_exit 1 "check v6 on a runtime that stops at v5" "$coload" check --device gfx90a --co-versions 4,5 "$fixtures/check/kernel_args-cov6.co"
expect_exit 0 "check v4 on a runtime that stops at v5" "$coload" check --device gfx90a --co-versions 4,5 "$fixtures/check/kernel_args-cov4.co"
expect_exit 2 "check of a fat binary without --device" "$coload" check "$fixtures/check/kernel_args.hipfb"
expect_exit 2 "check --lds without --device" "$coload" check --lds 65536 "$fixtures/check/lds_heavy-gfx950.co"
expect_exit 2 "check without FILE" "$coload" check --device gfx942
expect_exit 1 "check of a missing file" "$coload" check /nonexistent/file.co

# Exit codes: 1 for input errors, 2 for usage errors.
expect_exit 1 "ls of a missing file" "$coload" ls /nonexistent/file.so
expect_exit 1 "ls of a non-fat-binary" "$coload" ls /bin/sh
# An object whose device code waits for a link step (-fgpu-rdc, the new driver) says so.
if command -v llvm-objcopy-22 >/dev/null; then
  printf x > "$work/payload"
  llvm-objcopy-22 --add-section "__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx90a=$work/payload" /bin/true \
    "$work/rdc.o"
  "$coload" ls "$work/rdc.o" 2>"$work/err"
  check "ls of an -fgpu-rdc object exits 1" test $? -eq 1
  check "ls of an -fgpu-rdc object names its bundle section" \
    grep -q "its section __CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx90a holds device code for a link step" \
    "$work/err"
fi
expect_exit 2 "no command" "$coload"
expect_exit 2 "unknown command" "$coload" frobnicate
expect_exit 2 "unknown ls option" "$coload" ls --bogus "$fixtures/$first"
expect_exit 2 "extract without --target" "$coload" extract -o "$work/x" "$fixtures/$first"
expect_exit 1 "extract of an absent target" "$coload" extract --target gfx000 -o "$work/x" "$fixtures/$first"
# A host entry named by its whole ID is written empty, as clang-offload-bundler writes it.
"$coload" extract --target host-x86_64-unknown-linux-gnu- --bundle 0 -o "$work/host.out" \
  "$fixtures/bundles/bundler_plain.hipfb"
check "extract of the host entry writes an empty file" test -f "$work/host.out" -a ! -s "$work/host.out"
# An existing output ends as the entry alone, whether longer or shorter, and
# stays the same file (a hard link to it sees the entry too); a pipe takes
# the bytes as they are.
IFS=$'\t' read -r fixture bundle id expected < <(grep -v '^#' "$fixtures/manifest.tsv" | head -1)
{ cat "$fixtures/$expected"; head -c 100000 /dev/zero; } > "$work/over.co"
ln -f "$work/over.co" "$work/over.link"
"$coload" extract --target "$id" --bundle "$bundle" -o "$work/over.co" "$fixtures/$fixture"
check "extract over a longer file leaves exactly the entry" cmp -s "$work/over.co" "$fixtures/$expected"
check "extract over a file writes that file (its hard link sees the entry)" cmp -s "$work/over.link" "$fixtures/$expected"
head -c 10 "$fixtures/$expected" > "$work/short.co"
"$coload" extract --target "$id" --bundle "$bundle" -o "$work/short.co" "$fixtures/$fixture"
check "extract over a shorter file leaves exactly the entry" cmp -s "$work/short.co" "$fixtures/$expected"
"$coload" extract --target "$id" --bundle "$bundle" -o /dev/stdout "$fixtures/$fixture" | cat > "$work/piped.co"
check "extract -o /dev/stdout through a pipe writes the entry" cmp -s "$work/piped.co" "$fixtures/$expected"
expect_exit 0 "help" "$coload" --help
# `coload COMMAND --help` (or -h) prints that command's usage, from its option
# table, to stdout and exits 0; it lists each option the command takes.
device_options="--device --extended-isa-compat --lds --co-versions"
declare -A command_options=(
  [ls]="--json --max-decompressed-bytes --recursive --pattern"
  [extract]="$device_options --target --retarget --bundle -o --max-decompressed-bytes"
  [select]="$device_options --json -o --max-decompressed-bytes --recursive --pattern"
  [check]="$device_options --json --max-decompressed-bytes --recursive --pattern"
  [devices]="--runtime --json"
  [load]="$device_options --runtime --json --recursive --pattern"
)
for command in ls extract select check devices load; do
  for spelling in --help -h; do
    "$coload" "$command" "$spelling" > "$work/help.out" 2> "$work/help.err"
    check "$command $spelling exits 0" test $? -eq 0
    check "$command $spelling prints nothing on stderr" test ! -s "$work/help.err"
    check "$command $spelling starts with its usage line" grep -q "^usage: coload $command \\[options\\]" "$work/help.out"
    for option in ${command_options[$command]} --help; do
      check "$command $spelling lists $option" grep -qE -- "^  (-h, )?$option( |\$)" "$work/help.out"
    done
    listed=$(grep -cE '^  -' "$work/help.out")
    check "$command $spelling lists no other option" test "$listed" -eq $(($(wc -w <<< "${command_options[$command]}") + 1))
  done
done
check "devices --help offers the runtimes" grep -qE '^  --runtime hsa\|hip  ' <("$coload" devices --help)
check "load --help offers the runtimes" grep -qE '^  --runtime hsa\|hip\|dry-run  ' <("$coload" load --help)
# --help is read where it stands: an error before it wins, and an option's value is never it.
"$coload" select --frob --help > "$work/out" 2> "$work/err"
check "an unknown option before --help is the error" test $? -eq 2 -a ! -s "$work/out"
check "the error names the unknown option" grep -qx "coload: select: unknown option or missing value: '--frob'" "$work/err"
"$coload" select --device gfx9999 --help /nonexistent > "$work/out" 2> "$work/err"
check "--help after other arguments prints the usage alone" test $? -eq 0 -a ! -s "$work/err"
check "--help after other arguments prints select's usage" grep -q "^usage: coload select " "$work/out"
(cd "$work" && "$coload" select --device gfx90a -o --help "$fixtures/bundles/driver_two_arch.hipfb" > out 2> err)
check "-o --help writes a file named --help" test $? -eq 0 -a -s "$work/--help"
expect_exit 2 "select without --device" "$coload" select "$fixtures/$first"
expect_exit 2 "select with an unknown processor" "$coload" select --device gfx9999 "$fixtures/$first"
expect_exit 2 "select with a generic device" "$coload" select --device gfx9-generic "$fixtures/$first"
expect_exit 2 "select with a feature the processor lacks" "$coload" select --device gfx1030:xnack+ "$fixtures/$first"
expect_exit 2 "select with bad --co-versions" "$coload" select --device gfx90a --co-versions 4,9 "$fixtures/$first"
expect_exit 2 "a negative --lds behind a space" "$coload" select --device gfx90a --lds " -1" "$fixtures/$first"
expect_exit 2 "a --lds with a sign" "$coload" select --device gfx90a --lds +5 "$fixtures/$first"
# select, check and extract --device choose alike: a hotswap plugin that cannot be loaded fails each.
for command in "select --device gfx90a" "check --device gfx90a" "extract --device gfx90a -o $work/hs.co"; do
  # shellcheck disable=SC2086
  COLOAD_HOTSWAP=1 COLOAD_HOTSWAP_PLUGIN=/nonexistent/plugin.so "$coload" $command "$fixtures/$first" \
    >/dev/null 2>"$work/err"
  check "$command with an unusable hotswap plugin exits 1" test $? -eq 1
  check "$command names the plugin" grep -q "coload: hotswap: .*nonexistent/plugin.so" "$work/err"
done
# An entry's URI percent-encodes the path: a '#' in a file name is not the fragment.
cp "$fixtures/bundles/bundler_plain.hipfb" "$work/a#b c.hipfb"
"$coload" ls "$work/a#b c.hipfb" >"$work/out"
check "ls percent-encodes the path of a URI" grep -q "file://.*/a%23b%20c.hipfb#offset=4096&size=" "$work/out"
# A file load cannot read is a failed load: --json still prints its document.
: > "$work/empty.bin"
"$coload" load --json --runtime dry-run --device gfx90a "$work/empty.bin" >"$work/load.json" 2>/dev/null
check "load --json of an unreadable file exits 1" test $? -eq 1
check "load --json of an unreadable file prints a failed load" python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["ok"] is False and "input is empty" in doc["error"] and doc["code_objects"] == [], doc
' "$work/load.json"
# Output that cannot be written is an error, not a success.
if [ -w /dev/full ]; then
  "$coload" ls "$fixtures/$first" >/dev/full 2>"$work/err"
  check "ls to a full device exits 1" test $? -eq 1
  check "ls to a full device says so" grep -q "writing the output failed" "$work/err"
fi
# A bare code object that cannot be read: named once, and labelled in check's text.
head -c 1000 "$fixtures/co/gfx90a.co" > "$work/cut.co"
"$coload" load --runtime dry-run --device gfx90a "$work/cut.co" 2>"$work/err"
check "load names a broken bare code object's bundle once" bash -c \
  'grep -q "cut.co: bundle 0 at offset 0x0: " "$1" && ! grep -q "bundle 0: .*bundle 0 at" "$1"' _ "$work/err"
"$coload" check "$work/cut.co" >"$work/out" 2>&1
check "check labels an unreadable bare code object" grep -q "^code object: error: " "$work/out"
# The cap flag takes what COLOAD_MAX_DECOMPRESSED_BYTES takes, and refuses what it refuses.
expect_exit 0 "--max-decompressed-bytes with a suffix" "$coload" ls --max-decompressed-bytes 64M "$fixtures/$first"
expect_exit 2 "--max-decompressed-bytes 0" "$coload" ls --max-decompressed-bytes 0 "$fixtures/$first"
# ... and without COLOAD_HOTSWAP=1 the plugin is not read, which is said, not silent.
COLOAD_HOTSWAP_PLUGIN=/nonexistent/plugin.so "$coload" select --device gfx90a "$fixtures/$first" >/dev/null \
  2>"$work/err"
check "a plugin without COLOAD_HOTSWAP=1 does not fail select" test $? -eq 0
check "a plugin without COLOAD_HOTSWAP=1 is warned about" grep -q "COLOAD_HOTSWAP is not 1" "$work/err"
# Numbers are decimal or 0x-prefixed: a leading zero is not octal.
"$coload" check --device gfx90a --lds 0100 "$fixtures/bundles/bundler_plain.hipfb" >"$work/out" 2>&1
check "a leading zero is decimal (--lds 0100 is 100 bytes)" grep -q "exceeds the 100-byte LDS" "$work/out"

# A corrupted hash is reported with the file, bundle and offset.
ccob=$(awk -F'\t' '!/^#/ && $1 ~ /v3/ {print $1; exit}' "$fixtures/fixtures.tsv")
if [ -n "$ccob" ]; then
  cp "$fixtures/$ccob" "$work/bad.hipfb"
  python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(24); b = f.read(1); f.seek(24); f.write(bytes([b[0] ^ 0xff]))' "$work/bad.hipfb"
  "$coload" ls "$work/bad.hipfb" >/dev/null 2>"$work/err"
  check "hash mismatch exits 1 and names the field" grep -q "bad.hipfb: bundle 0 at offset 0x0: CCOB v3: stored hash" "$work/err"
  # The streamed paths verify by default; COLOAD_HASH_CHECK=skip is the documented fast mode.
  for command in "select --device gfx90a" "extract --device gfx90a -o $work/bad.co" "check --device gfx90a" \
                 "load --runtime dry-run --device gfx90a"; do
    # shellcheck disable=SC2086
    "$coload" $command "$work/bad.hipfb" >"$work/err" 2>&1
    check "$command verifies the hash by default (exit 1)" test $? -eq 1
    check "$command names the stored hash" grep -q "CCOB v3: stored hash 0x" "$work/err"
    check "$command names the bundle once" bash -c '! grep -q "bundle 0: bundle 0" "$1"' _ "$work/err"
    # shellcheck disable=SC2086
    expect_exit_env 0 "$command with COLOAD_HASH_CHECK=skip" COLOAD_HASH_CHECK=skip "$coload" $command "$work/bad.hipfb"
  done
  expected=$(awk -F'\t' -v f="$ccob" '$1 == f && $3 == "hipv4-amdgcn-amd-amdhsa--gfx90a" {print $4}' "$fixtures/manifest.tsv")
  check "extract --device with skip writes the bundler's bytes" cmp -s "$work/bad.co" "$fixtures/$expected"
  COLOAD_LOG=debug "$coload" load --runtime dry-run --device gfx90a "$fixtures/$ccob" >/dev/null 2>"$work/log"
  check "COLOAD_LOG=debug: load reports the stream" grep -q "bundle 0: CCOB streamed for gfx90a.*hash verified, kept entry" "$work/log"
  check "COLOAD_LOG=debug: load reports the choice" grep -q "coload: info: .*: native for device 0 (gfx90a" "$work/log"
  # Verified marks, by default under the user's cache: a checked CCOB is
  # marked, the next run trusts the mark, a corrupt copy is still refused.
  marked() { env -u XDG_CACHE_HOME HOME="$work/home" COLOAD_VERIFY_CACHE= "$@"; }
  marked env COLOAD_LOG=debug "$coload" load --runtime dry-run --device gfx90a "$fixtures/$ccob" >/dev/null 2>"$work/log"
  check "an unmarked CCOB is verified" grep -q "hash verified, kept entry" "$work/log"
  check "one mark under \$HOME/.cache/coload/verified" test "$(ls "$work/home/.cache/coload/verified" | wc -l)" -eq 1
  marked env COLOAD_LOG=debug "$coload" load --runtime dry-run --device gfx90a "$fixtures/$ccob" >/dev/null 2>"$work/log"
  check "a marked CCOB is not decoded again for its hash" grep -q "hash verified earlier (marked), kept entry" "$work/log"
  marked "$coload" extract --device gfx90a -o "$work/marked.co" "$fixtures/$ccob"
  check "extract from a marked CCOB writes the bundler's bytes" cmp -s "$work/marked.co" "$fixtures/$expected"
  marked "$coload" select --device gfx90a "$work/bad.hipfb" >/dev/null 2>&1
  check "a corrupt copy of a marked CCOB is refused (exit 1)" test $? -eq 1
  expect_exit_env 2 "relative COLOAD_VERIFY_CACHE" COLOAD_VERIFY_CACHE=marks "$coload" select --device gfx90a "$fixtures/$ccob"
  # Whole-bundle reads (ls) mark too, and trust marks.
  env -u XDG_CACHE_HOME HOME="$work/home2" COLOAD_VERIFY_CACHE= "$coload" ls "$fixtures/$ccob" >/dev/null
  check "ls marks the CCOB it checked" test "$(ls "$work/home2/.cache/coload/verified" | wc -l)" -eq 1
  marked "$coload" ls "$work/bad.hipfb" >/dev/null 2>&1
  check "ls refuses a corrupt copy of a marked CCOB (exit 1)" test $? -eq 1
  expect_exit_env 2 "ls with a relative COLOAD_VERIFY_CACHE" COLOAD_VERIFY_CACHE=marks "$coload" ls "$fixtures/$ccob"
  "$coload" load --runtime dry-run --device gfx942 "$fixtures/bundles/driver_two_arch.hipfb" >/dev/null 2>"$work/log"
  check "load prints a failure once (no registry warning beside it)" test "$(grep -c "no code object fits" "$work/log")" -eq 1
  expect_exit_env 2 "unknown COLOAD_HASH_CHECK value" COLOAD_HASH_CHECK=off "$coload" select --device gfx90a "$work/bad.hipfb"
fi

# `load --json`: one document, success or failure.
"$coload" load --runtime dry-run --device gfx1100 --json "$fixtures/host/libkernels.so" > "$work/load.json"
check "load --json lists both code objects and the kernel sizes" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] and d["error"] is None and d["device"] == "gfx1100", d
assert [c["target"] for c in d["code_objects"]] == ["gfx1100", "gfx11-generic"], d["code_objects"]
k = {k["name"]: k for c in d["code_objects"] for k in c["kernels"]}
assert k["_Z9block_sumPKfPfj"]["kernarg_size"] == 20 and k["_Z9block_sumPKfPfj"]["group_segment_size"] == 1024
' "$work/load.json"
"$coload" load --runtime dry-run --device gfx942 --json "$fixtures/bundles/driver_two_arch.hipfb" > "$work/load.json"
check "load --json that fails exits 1" test $? -eq 1
check "load --json failure names the miss" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert not d["ok"] and d["code_objects"] == [] and "no code object fits device gfx942" in d["error"], d
' "$work/load.json"

# `load` with the dry-run runtime: every bundle with an entry for the device,
# each kernel with its handle (0) and sizes; failures exit 1 with the reason.
"$coload" load --runtime dry-run --device gfx1100 "$fixtures/host/libkernels.so" > "$work/load.txt" 2>&1
check "load dry-run lists the kernels of both fitting bundles" grep -q "2 code objects" "$work/load.txt"
check "load dry-run lists handle and sizes" \
  grep -q "kernel _Z9block_sumPKfPfj: handle 0x0, kernarg 20 (align 8), LDS 1024, private 0" "$work/load.txt"
expect_exit 0 "load dry-run of a compressed bundle" "$coload" load --runtime dry-run --device gfx90a \
  "$fixtures/compressed/bundler22_v3.hipfb"
expect_exit 1 "load dry-run with no fitting entry" "$coload" load --runtime dry-run --device gfx942 \
  "$fixtures/bundles/driver_two_arch.hipfb"
expect_exit 1 "load dry-run over the device LDS" "$coload" load --runtime dry-run --device gfx950 --lds 65536 \
  "$fixtures/check/lds_heavy-gfx950.co"
expect_exit 2 "load dry-run without a device spec" "$coload" load --runtime dry-run "$fixtures/bundles/driver_two_arch.hipfb"
expect_exit 2 "load with an unknown runtime" "$coload" load --runtime cuda "$fixtures/bundles/driver_two_arch.hipfb"
# `devices` and `load` on the real runtime: this machine has no GPU, so a clear
# message and exit 1 (a machine with one lists it and exits 0).
if [ ! -e /dev/kfd ]; then
  "$coload" devices --runtime hsa > /dev/null 2>"$work/err"
  code=$?
  check "devices without a GPU exits 1" test "$code" -eq 1
  check "devices without a GPU says why" grep -q "no GPU devices: the hsa runtime cannot be used" "$work/err"
  expect_exit 1 "load on hsa without a GPU" "$coload" load "$fixtures/bundles/driver_two_arch.hipfb"
fi
expect_exit 2 "devices with an unknown runtime" "$coload" devices --runtime dry-run

# extract --device --retarget: gfx1030 code relabelled for gfx1031 (same ISA).
rt=$work/retargeted.co
rm -f "$rt"
if "$coload" extract --device gfx1031 --retarget -o "$rt" "$fixtures/co/gfx1030.co" 2>"$work/err"; then
  check "retarget: says it retargeted" grep -q "retargeted for gfx1031" "$work/err"
  expect_exit 0 "retarget: check --device gfx1031 passes" "$coload" check --device gfx1031 "$rt"
  expect_exit 1 "retarget: the source alone fails check --device gfx1031" \
    "$coload" check --device gfx1031 "$fixtures/co/gfx1030.co"
  if command -v llvm-readelf-22 >/dev/null; then
    check "retarget: readelf shows gfx1031" bash -c \
      'llvm-readelf-22 -h "$1" | grep -Eq "Flags: +0x[0-9a-f]+, gfx1031$"' _ "$rt"
    check "retarget: readelf shows the new amdhsa.target" bash -c \
      'llvm-readelf-22 --notes "$1" | grep -q "amdhsa.target: *amdgcn-amd-amdhsa--gfx1031$"' _ "$rt"
  fi
  check "retarget: same size as the source" test "$(stat -c %s "$rt")" -eq "$(stat -c %s "$fixtures/co/gfx1030.co")"
else
  failed=$((failed + 1)); echo "FAIL: extract --retarget gfx1030 -> gfx1031: $(cat "$work/err")"
fi
# A native entry is written unchanged, and says so.
rm -f "$rt"
if "$coload" extract --device gfx1030 --retarget -o "$rt" "$fixtures/bundles/driver_two_arch.hipfb" 2>"$work/err"; then
  check "retarget: native entry written unchanged" grep -q "native fit for gfx1030; written unchanged" "$work/err"
  "$coload" extract --target gfx1030 -o "$work/native.co" "$fixtures/bundles/driver_two_arch.hipfb" 2>/dev/null
  check "retarget: native entry is the bundled bytes" cmp -s "$rt" "$work/native.co"
else
  failed=$((failed + 1)); echo "FAIL: extract --device gfx1030 --retarget (native): $(cat "$work/err")"
fi
# Nothing fits: exit 1 with the selector's message.
"$coload" extract --device gfx1100 --retarget -o "$rt" "$fixtures/co/gfx1030.co" > /dev/null 2>"$work/err"
check "retarget: nothing fits exits 1" test $? -eq 1
check "retarget: nothing fits names the device" grep -q "gfx1100" "$work/err"
expect_exit 2 "extract --retarget without --device" "$coload" extract --retarget -o "$rt" "$fixtures/co/gfx1030.co"
expect_exit 2 "extract with --target and --device" \
  "$coload" extract --target gfx1030 --device gfx1031 -o "$rt" "$fixtures/co/gfx1030.co"

# A host image of CCOBs is decoded on several threads (one per CCOB, up to
# the cores): what select, check and extract report, and write, is in bundle
# order and the same as for the image's plain twin, read on one thread.
plain_host="$fixtures/host/libkernels.so"
ccob_host="$fixtures/host/libkernels_compressed.so"
for device in gfx90a gfx1030 gfx942; do
  for command in select check; do
    "$coload" "$command" --device "$device" "$plain_host" > "$work/plain.txt" 2>&1
    plain_exit=$?
    "$coload" "$command" --device "$device" "$ccob_host" > "$work/ccob.txt" 2>&1
    ccob_exit=$?
    sed -i "s#$ccob_host#HOST#g" "$work/ccob.txt"; sed -i "s#$plain_host#HOST#g" "$work/plain.txt"
    check "$command $device: CCOB host image reports as its plain twin" cmp -s "$work/plain.txt" "$work/ccob.txt"
    check "$command $device: CCOB host image exits as its plain twin" test "$plain_exit" -eq "$ccob_exit"
  done
done
"$coload" select --device gfx90a "$ccob_host" | grep -o '^bundle [0-9]*' | tr '\n' ' ' > "$work/order.txt"
check "select over CCOBs lists bundles 0 1 2 in order" test "$(cat "$work/order.txt")" = "bundle 0 bundle 1 bundle 2 "
# Bundle 1 alone has gfx942; --device gfx90a stops at bundle 1, which has no fit.
for how in "--target gfx90a" "--target gfx942" "--device gfx90a"; do
  rm -rf "$work/xp" "$work/xc"; mkdir -p "$work/xp" "$work/xc"
  # shellcheck disable=SC2086
  "$coload" extract $how -o "$work/xp/out" "$plain_host" > "$work/plain.txt" 2>&1
  echo "exit $?" >> "$work/plain.txt"
  # shellcheck disable=SC2086
  "$coload" extract $how -o "$work/xc/out" "$ccob_host" > "$work/ccob.txt" 2>&1
  echo "exit $?" >> "$work/ccob.txt"
  sed -i "s#$ccob_host#HOST#g; s#$work/xc#OUT#g" "$work/ccob.txt"
  sed -i "s#$plain_host#HOST#g; s#$work/xp#OUT#g" "$work/plain.txt"
  check "extract $how: CCOB host image writes its plain twin's files" diff -r "$work/xp" "$work/xc"
  check "extract $how: CCOB host image reports and exits as its plain twin" cmp -s "$work/plain.txt" "$work/ccob.txt"
done

# What a command keeps of a file's CCOBs (chosen entries, tables) shares
# COLOAD_MAX_DECOMPRESSED_BYTES, as a registry load does: three CCOBs (v3,
# zlib), each one gfx90a entry well under the limit, whose entries together
# pass it.
python3 - "$fixtures/co/gfx90a.co" "$work/three.ccob" <<'PY'
import hashlib, struct, sys, zlib
code = open(sys.argv[1], 'rb').read()
out = b''
for i in range(3):
    entry = code + bytes(i + 1)  # each CCOB its own
    ident = b'hipv4-amdgcn-amd-amdhsa--gfx90a'
    header = 32 + 24 + len(ident)
    plain = b'__CLANG_OFFLOAD_BUNDLE__' + struct.pack('<QQQQ', 1, header, len(entry), len(ident)) + ident + entry
    payload = zlib.compress(plain)
    out += b'CCOB' + struct.pack('<HHQQ', 3, 0, 32 + len(payload), len(plain)) + hashlib.md5(plain).digest()[:8] + payload
open(sys.argv[2], 'wb').write(out)
PY
co_size=$(stat -c %s "$fixtures/co/gfx90a.co")
tight=$((co_size * 5 / 2))
roomy=$((co_size * 4))
for how in "select --device gfx90a -o $work/kept/out" "extract --device gfx90a -o $work/kept/out" \
           "extract --target gfx90a -o $work/kept/out" "check --device gfx90a"; do
  rm -rf "$work/kept"; mkdir -p "$work/kept"
  # shellcheck disable=SC2086
  COLOAD_MAX_DECOMPRESSED_BYTES=$roomy "$coload" $how "$work/three.ccob" > /dev/null 2>&1
  check "$how: three CCOBs within the limit together" test $? -eq 0
  # shellcheck disable=SC2086
  COLOAD_MAX_DECOMPRESSED_BYTES=$tight "$coload" $how "$work/three.ccob" > /dev/null 2> "$work/kept.err"
  check "$how: three CCOBs past the limit together exit 1" test $? -eq 1
  check "$how: the error names the bundle that passes it" \
    grep -q "three.ccob: bundle 2: .* would pass the limit $(printf '0x%x' "$tight") (max_decompressed_bytes) on what this command keeps" "$work/kept.err"
done

# File sets (docs/loading.md): a folder of per-arch objects is one binary;
# each choice names its file. Native where present, gfx11-generic for
# gfx1101 and gfx1151, nothing for gfx906 (listing what is there).
hsa=$fixtures/filesets/hsa
for row in gfx90a:gfx90a:native gfx942:gfx942:native gfx950:gfx950:native gfx1030:gfx1030:native \
           gfx1101:gfx11-generic:generic gfx1151:gfx11-generic:generic; do
  IFS=: read -r dev arch tier <<< "$row"
  "$coload" select --device "$dev" --recursive --pattern 'f*.co' "$hsa" > "$work/set.out" 2>&1
  check "select $dev in a folder: exit 0" test $? -eq 0
  check "select $dev in a folder: fmha_fwd from $arch" \
    grep -qx "bundle 0: selected hipv4-amdgcn-amd-amdhsa--$arch ($tier) from $hsa/$arch/fmha_fwd.co" "$work/set.out"
  "$coload" load --runtime dry-run --device "$dev" --recursive "$hsa" > "$work/set.out" 2>&1
  check "load $dev from a folder: gemm from $arch" grep -q "target $arch.* from $hsa/$arch/gemm.co" "$work/set.out"
done
"$coload" select --device gfx906 --recursive "$hsa" > "$work/set.out" 2>&1
check "select gfx906 in a folder: exit 1" test $? -eq 1
check "select gfx906 in a folder: lists the files there" \
  grep -q "bundle 1: nothing selected: $hsa: bundle 1 (gemm in $hsa/gfx1030/gemm.co, " "$work/set.out"
"$coload" select --device gfx942 "$hsa/gfx942/gemm.co" "$hsa/gfx90a/gemm.co" > "$work/set.out" 2>&1
check "select in two listed files" grep -qx "bundle 0: selected hipv4-amdgcn-amd-amdhsa--gfx942 (native) from $hsa/gfx942/gemm.co" "$work/set.out"
"$coload" check --device gfx950 --json --recursive "$hsa/gfx950" > "$work/set.out" 2>&1
check "check --json a folder: kind file_set" grep -q '"kind":"file_set"' "$work/set.out"
check "check --json a folder: each code object's file" grep -q "\"file\":\"$hsa/gfx950/gemm_lds96.co\"" "$work/set.out"
"$coload" select --device gfx942 "$hsa/gfx942/gemm.co" "$hsa/gfx942/gemm.co" > "$work/set.out" 2>&1
check "one kernel twice for one target: exit 1" test $? -eq 1
check "one kernel twice for one target: named" grep -q 'kernel "gemm" for target gfx942 is in both' "$work/set.out"
"$coload" ls --recursive "$hsa" > "$work/set.out" 2>&1
check "ls a folder: exit 0" test $? -eq 0
check "ls a folder: one file set" grep -qx "$hsa: file set of 11 files, 3 bundles" "$work/set.out"
check "ls a folder: a grouped entry names its file" \
  grep -q "^  entry 3: hipv4-amdgcn-amd-amdhsa--gfx942 .* file://$hsa/gfx942/fmha_fwd.co#offset=0&size=" "$work/set.out"
"$coload" ls --json --recursive --pattern 'gemm*.co' "$hsa" > "$work/set.out" 2>&1
check "ls --json a folder: each entry's file" grep -q "\"file\":\"$hsa/gfx950/gemm_lds96.co\"" "$work/set.out"
"$coload" ls "$hsa/gfx942/gemm.co" "$hsa/gfx90a/gemm.co" > "$work/set.out" 2>&1
check "ls several files: one listing each, as before" test "$(grep -c ': code_object, 1 bundle' "$work/set.out")" -eq 2
expect_exit 1 "ls a folder without --recursive: no file directly in it" "$coload" ls "$hsa"
expect_exit 1 "select in a folder with no match" "$coload" select --device gfx942 --pattern '*.hsaco' "$hsa"
expect_exit 1 "select in a missing file of a set" "$coload" select --device gfx942 "$hsa/gfx942/gemm.co" "$hsa/absent.co"

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
