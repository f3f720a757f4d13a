#!/usr/bin/env bash
# Compares two builds of the coload tool command by command: stdout, stderr,
# exit code and every file a command writes must be byte-identical. Used to
# show that a refactor keeps the CLI's behaviour (docs/testing.md).
#
#   cli_compare.sh OLD_COLOAD NEW_COLOAD FIXTURES_DIR
#
# FIXTURES_DIR is build/fixtures. The commands run every subcommand over every
# fixture, for several devices and environments, plus damaged copies of the
# fixtures (cut short, a flipped byte, empty) and usage errors. `--help` after
# a command is left out: it is new. Prints one line per difference and a
# closing "N passed, N failed".
set -uo pipefail
old=$1
new=$2
fixtures=$(cd "$3" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export COLOAD_VERIFY_CACHE=off
passed=0
failed=0

environment=(COLOAD_VERIFY_CACHE=off)  # what run_both sets for the command
# run_both NAME COMMAND_ARGS...: runs each build in its own empty folder (what
# -o writes lands there) and compares everything it printed and wrote.
run_both() {
  local name=$1; shift
  local side
  for side in old new; do
    local bin=$old
    [ "$side" = new ] && bin=$new
    rm -rf "$work/$side" && mkdir -p "$work/$side/out"
    (cd "$work/$side/out" && timeout 60 env "${environment[@]}" "$bin" "$@" > "../stdout" 2> "../stderr"
      echo $? > "../status")
    # Debug lines come from the decode threads in the order they finish:
    # the same lines, in any order, are the same output.
    if [[ " ${environment[*]} " == *" COLOAD_LOG=debug "* ]]; then
      sort "$work/$side/stderr" > "$work/$side/stderr.sorted" && mv "$work/$side/stderr.sorted" "$work/$side/stderr"
    fi
  done
  if diff -r "$work/old" "$work/new" > "$work/diff" 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "DIFF: $name: ${environment[*]} coload $*"
    head -n 20 "$work/diff"
  fi
}

devices=(gfx90a gfx90a:sramecc+:xnack- gfx90a:xnack+ gfx942 gfx950 gfx908:sramecc+:xnack- gfx1030 gfx1031 gfx1100
  gfx1101 gfx1201 gfx900)

# Damaged inputs: each fixture cut to half and to 100 bytes, and one with a byte flipped in the middle.
mkdir -p "$work/inputs"
inputs=()
while IFS=$'\t' read -r fixture _; do
  [[ -z "$fixture" || "$fixture" == \#* ]] && continue
  inputs+=("$fixtures/$fixture")
done < "$fixtures/fixtures.tsv"
damaged=()
for input in "${inputs[@]}"; do
  base=$(echo "${input#"$fixtures/"}" | tr '/' '_')
  size=$(stat -c %s "$input")
  head -c $((size / 2)) "$input" > "$work/inputs/$base.half"
  head -c 100 "$input" > "$work/inputs/$base.100"
  cp "$input" "$work/inputs/$base.flip"
  printf '\xa5' | dd of="$work/inputs/$base.flip" bs=1 seek=$((size / 2)) conv=notrunc status=none
  damaged+=("$work/inputs/$base.half" "$work/inputs/$base.100" "$work/inputs/$base.flip")
done
: > "$work/inputs/empty"
damaged+=("$work/inputs/empty" "$work/inputs/missing")

for input in "${inputs[@]}" "${damaged[@]}"; do
  run_both ls ls "$input"
  run_both "ls --json" ls --json "$input"
  run_both "check" check "$input"
  run_both "check --json" check --json "$input"
  # Damaged inputs fail in reading, whatever the device: two devices say as much.
  some_devices=("${devices[@]}")
  [[ "$input" == "$work"/* ]] && some_devices=(gfx90a gfx1100)
  for device in "${some_devices[@]}"; do
    run_both select select --device "$device" "$input"
    run_both "check --device" check --device "$device" "$input"
    run_both "load dry-run" load --runtime dry-run --device "$device" "$input"
  done
done
for input in "${inputs[@]}"; do
  for device in gfx90a:sramecc+:xnack- gfx942 gfx1031 gfx1100; do
    run_both "select --json -o" select --json --device "$device" -o out.co "$input"
    run_both "select -o" select --device "$device" -o out.co "$input"
    run_both "check --json --device" check --json --device "$device" "$input"
    run_both "load --json dry-run" load --json --runtime dry-run --device "$device" "$input"
    run_both "extract --device" extract --device "$device" -o out.co "$input"
    run_both "extract --device --retarget" extract --device "$device" --retarget -o out.co "$input"
  done
  run_both "select --extended-isa-compat" select --device gfx1031 --extended-isa-compat "$input"
  run_both "check --lds --co-versions" check --device gfx950 --lds 65536 --co-versions 4,5 "$input"
  run_both "select --max-decompressed-bytes" select --device gfx90a --max-decompressed-bytes 4K "$input"
  run_both "ls --max-decompressed-bytes" ls --max-decompressed-bytes 4K "$input"
done

# Every manifest row, as the CLI test extracts it, and without --bundle.
while IFS=$'\t' read -r fixture bundle id _; do
  [[ -z "$fixture" || "$fixture" == \#* ]] && continue
  run_both "extract --target --bundle" extract --target "$id" --bundle "$bundle" -o out.co "$fixtures/$fixture"
  run_both "extract --target" extract --target "$id" -o out.co "$fixtures/$fixture"
done < "$fixtures/manifest.tsv"

# Environments the library reads (docs/environment.md).
mixed=$fixtures/host/libkernels_mixed.so
compressed=$fixtures/host/libkernels_compressed.so
for input in "$mixed" "$compressed" "$fixtures/bundles/driver_two_arch.hipfb" "$fixtures/compressed/driver_v3.hipfb"; do
  for setting in COLOAD_HASH_CHECK=skip COLOAD_UNBUNDLER=comgr COLOAD_EXTENDED_ISA_COMPAT=gfx1031 COLOAD_HOTSWAP=1 \
    COLOAD_LOG=debug COLOAD_LOG=loud COLOAD_UNBUNDLER=both COLOAD_MAX_DECOMPRESSED_BYTES=8K \
    COLOAD_HOTSWAP_PAIRS=gfx1030:gfx1031; do
    for device in gfx1031 gfx90a gfx1100; do
      environment=(COLOAD_VERIFY_CACHE=off "$setting")
      run_both "$setting select" select --device "$device" "$input"
    done
    run_both "$setting load" load --runtime dry-run --device gfx1031 "$input"
    environment=(COLOAD_VERIFY_CACHE=off)
  done
done

# Usage errors and help.
run_both "no command"
run_both "help" --help
run_both "help word" help
run_both "unknown command" frobnicate
run_both "select without device" select "$mixed"
run_both "select two files" select --device gfx90a "$mixed" "$mixed"
run_both "select bad device" select --device gfx9999 "$mixed"
run_both "select unknown option" select --device gfx90a --frob "$mixed"
run_both "select missing value" select --device
run_both "select bad lds" select --device gfx90a --lds 12x "$mixed"
run_both "select bad co-versions" select --device gfx90a --co-versions 4,9 "$mixed"
run_both "select bad byte count" select --device gfx90a --max-decompressed-bytes 0 "$mixed"
run_both "extract without -o" extract --target gfx90a "$mixed"
run_both "extract both modes" extract --target gfx90a --device gfx90a -o out.co "$mixed"
run_both "extract neither mode" extract -o out.co "$mixed"
run_both "extract bad bundle" extract --target gfx90a --bundle 9 -o out.co "$mixed"
run_both "extract bundle not a number" extract --target gfx90a --bundle x -o out.co "$mixed"
run_both "extract retarget with target" extract --target gfx90a --retarget -o out.co "$mixed"
run_both "extract absent target" extract --target gfx1234 -o out.co "$mixed"
run_both "ls no file" ls
run_both "ls unknown option" ls --frob "$mixed"
run_both "ls two files" ls "$mixed" "$compressed"
run_both "ls --json two files" ls --json "$mixed" "$compressed"
run_both "check fat without device" check "$mixed"
run_both "check unknown option" check --frob "$mixed"
run_both "load bad runtime" load --runtime cuda "$mixed"
run_both "load dry-run without device" load --runtime dry-run "$mixed"
run_both "load unknown option" load --frob "$mixed"
run_both "devices bad runtime" devices --runtime cuda
run_both "devices unknown option" devices --frob
run_both "devices hsa" devices
run_both "devices hip --json" devices --runtime hip --json
run_both "load hsa" load "$mixed"
# What the option tables must keep: which error wins, values that look like
# options, repeated options, a lone '-', and each command's own wording.
run_both "main -h" -h
run_both "help ignores what follows" help select
run_both "ls lone dash is a file" ls -
run_both "ls missing byte count" ls "$mixed" --max-decompressed-bytes
run_both "ls bad byte count" ls --max-decompressed-bytes 1Q "$mixed"
run_both "ls json twice" ls --json --json "$mixed"
run_both "ls option after file" ls "$mixed" --json
run_both "ls empty argument" ls ""
run_both "ls --x=y" ls --max-decompressed-bytes=4K "$mixed"
run_both "select no file" select --device gfx90a
run_both "select lone dash" select --device gfx90a -
run_both "select -o missing value" select --device gfx90a "$mixed" -o
run_both "select co-versions missing value" select --device gfx90a "$mixed" --co-versions
run_both "select bad lds before unknown" select --lds 12x --frob --device gfx90a "$mixed"
run_both "select unknown before bad lds" select --frob --lds 12x --device gfx90a "$mixed"
run_both "select bad co-versions before bad byte count" select --co-versions 9 --max-decompressed-bytes 0 "$mixed"
run_both "select hex lds" select --device gfx90a --lds 0x10000 "$mixed"
run_both "select octal-looking lds" select --device gfx90a --lds 010 "$mixed"
run_both "select lds 0x" select --device gfx90a --lds 0x "$mixed"
run_both "select last device wins" select --device gfx9999 --device gfx90a "$mixed"
run_both "check last co-versions wins" check --device gfx90a --co-versions 6 --co-versions 4,5 "$fixtures/check/kernel_args-cov6.co"
run_both "select empty device" select --device "" "$mixed"
run_both "select device then no file" select --device "$mixed"
run_both "select value that looks like an option" select --device gfx90a -o --json "$mixed"
run_both "select -o --help is a file name" select --device gfx90a -o --help "$mixed"
run_both "select --device=SPEC" select --device=gfx90a "$mixed"
run_both "select empty file argument" select --device gfx90a ""
run_both "select two files before no device" select "$mixed" "$mixed"
run_both "select bad device before file count" select --device gfx9999 "$mixed" "$mixed"
run_both "extract device options without device" extract --lds 5 -o out.co "$mixed"
run_both "extract extended-isa-compat without device" extract --extended-isa-compat --target gfx90a -o out.co "$mixed"
run_both "extract retarget alone" extract --retarget -o out.co "$mixed"
run_both "extract both modes without -o" extract --target gfx90a --device gfx90a "$mixed"
run_both "extract neither mode without -o" extract "$mixed"
run_both "extract device without -o" extract --device gfx90a "$mixed"
run_both "extract two files" extract --target gfx90a -o out.co "$mixed" "$mixed"
run_both "extract no file" extract --target gfx90a -o out.co
run_both "extract empty target" extract --target "" -o out.co "$mixed"
run_both "extract empty -o" extract --target gfx90a -o "" "$mixed"
run_both "extract hex bundle" extract --target hipv4-amdgcn-amd-amdhsa--gfx90a --bundle 0x1 -o out.co "$mixed"
run_both "extract bundle missing value" extract --target gfx90a -o out.co "$mixed" --bundle
run_both "extract bad byte count" extract --target gfx90a --max-decompressed-bytes 1Q -o out.co "$mixed"
run_both "extract bad lds" extract --device gfx90a --lds x -o out.co "$mixed"
run_both "extract bad device" extract --device gfx9999 -o out.co "$mixed"
run_both "extract bad bundle before unknown" extract --bundle x --frob "$mixed"
run_both "extract lone dash" extract --target gfx90a -o out.co -
run_both "check lds without device" check --lds 65536 "$mixed"
run_both "check no file before lds without device" check --lds 65536
run_both "check bad device" check --device gfx9999 "$mixed"
run_both "check bad co-versions" check --device gfx90a --co-versions 2 "$mixed"
run_both "check two files" check "$mixed" "$mixed"
run_both "check -o is not an option" check -o out.co "$mixed"
run_both "load lds without dry-run" load --lds 65536 "$mixed"
run_both "load dry-run device index" load --runtime dry-run --device 3 "$mixed"
run_both "load dry-run bad device" load --runtime dry-run --device gfx9999 "$mixed"
run_both "load runtime missing value" load "$mixed" --runtime
run_both "load bad runtime before unknown" load --runtime cuda --frob "$mixed"
run_both "load unknown before bad runtime" load --frob --runtime cuda "$mixed"
run_both "load no file" load --runtime dry-run --device gfx90a
run_both "load two files" load --runtime dry-run --device gfx90a "$mixed" "$mixed"
run_both "load last runtime wins" load --runtime hip --runtime dry-run --device gfx90a "$mixed"
run_both "devices operand" devices "$mixed"
run_both "devices runtime missing value" devices --runtime
run_both "devices bad runtime before unknown" devices --runtime dry-run --frob
run_both "devices unknown before bad runtime" devices --frob --runtime cuda
run_both "devices lone dash" devices -
environment=(COLOAD_VERIFY_CACHE=off COLOAD_LOG=loud)
run_both "environment error before ls usage error" ls --frob "$mixed"
run_both "select usage error before environment error" select --frob "$mixed"
run_both "environment error before bad device" select --device gfx9999 "$mixed"
run_both "extract usage error before environment error" extract --target gfx90a "$mixed"
run_both "check usage error before environment error" check --lds 5 "$mixed"
run_both "load usage error before environment error" load --lds 5 "$mixed"
run_both "devices usage error before environment error" devices --frob
environment=(COLOAD_VERIFY_CACHE=off)

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
