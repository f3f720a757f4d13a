#!/usr/bin/env bash
# One golden rendering per CLI command: each command of `coload` (ls, select,
# extract, check, load, devices) runs on damaged inputs made from the
# toolchain's fixtures, and its exit code, stderr and the error objects of
# its --json output are compared byte for byte with tests/golden/cli/NAME.txt,
# so a change in how an error is rendered (Error::message, the CLI's
# "coload: " line, the JSON error strings) shows as a diff here.
#
#   cli_golden_test.sh COLOAD FIXTURES GOLDEN_DIR [--update]
#
# --update writes the transcripts into GOLDEN_DIR instead of comparing; the
# diff of the golden files is then the message change to review.
set -uo pipefail
coload=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fixtures=$(cd "$2" && pwd)
update=${4:-}
[ "$update" = "--update" ] && mkdir -p "$3"
golden=$(cd "$3" && pwd) || { echo "FAIL: no golden folder $3"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Only what each case sets: no COLOAD_* variable of the caller's, no verified
# marks (the stored hash is always checked).
for variable in $(env | sed -n 's/^\(COLOAD_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$variable"; done
export COLOAD_VERIFY_CACHE=off

# The damaged inputs, under relative names so the transcripts hold no path.
cd "$work" || exit 1
# bad_id.hipfb: a plain bundle whose entry 1 has a control byte in its ID
# (refused when the table is read: every command stops there).
python3 - "$fixtures/bundles/driver_two_arch.hipfb" bad_id.hipfb <<'EOF' || exit 1
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
at = 32  # magic (24) and num_entries (8)
for index in range(struct.unpack_from("<Q", data, 24)[0]):
    id_len = struct.unpack_from("<Q", data, at + 16)[0]
    if index == 1:
        data[at + 24 + id_len - 3] = 1
    at += 24 + id_len
open(sys.argv[2], "wb").write(data)
EOF
# bad_hash.hipfb: a CCOB whose payload has one byte flipped, so its stored
# hash disagrees (refused when the bundle is read: --json reports carry it).
python3 - "$fixtures/compressed/driver_v3.hipfb" bad_hash.hipfb <<'EOF' || exit 1
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0xFF
open(sys.argv[2], "wb").write(data)
EOF
# plain.hipfb: good bytes that a device with 512 bytes of LDS refuses to load.
cp "$fixtures/bundles/bundler_plain.hipfb" plain.hipfb

# run NAME [VAR=VALUE...] -- ARGS...: appends one case to NAME's transcript.
run() {
  local name=$1; shift
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  local out="$work/out/$name.txt"
  mkdir -p "$work/out"
  env "${vars[@]}" "$coload" "$@" > stdout 2> stderr
  local code=$?
  {
    echo "\$ ${vars[*]:+${vars[*]} }coload $*"
    echo "exit $code"
    echo "stderr:"
    cat stderr
    case " $* " in
      *" --json "*)
        echo "json errors:"
        python3 -c '
import json, sys
def walk(value, path):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "error" and item is not None:
                print(f"{path}.error: {item}")
            else:
                walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            walk(item, f"{path}[{index}]")
text = open(sys.argv[1]).read()
walk(json.loads(text), "") if text.strip() else print("(no JSON)")
' stdout || echo "(not JSON)"
        ;;
    esac
    echo
  } >> "$out"
}

run ls -- ls bad_id.hipfb
run ls -- ls --json bad_hash.hipfb
run select -- select --device gfx90a bad_id.hipfb
run select -- select --json --device gfx90a bad_hash.hipfb
run extract -- extract --target gfx90a -o out.co bad_id.hipfb
run extract -- extract --device gfx90a -o out.co bad_hash.hipfb
run check -- check --device gfx90a bad_id.hipfb
run check -- check --json --device gfx90a bad_hash.hipfb
run load -- load --runtime dry-run --device gfx90a --lds 512 plain.hipfb
run load -- load --json --runtime dry-run --device gfx90a bad_hash.hipfb
run devices COLOAD_MAX_DECOMPRESSED_BYTES=abc -- devices
run devices COLOAD_MAX_DECOMPRESSED_BYTES=abc -- devices --json

if [ "$update" = "--update" ]; then
  cp "$work"/out/*.txt "$golden"/
  echo "wrote $(ls "$work"/out | wc -l) golden files into $golden"
  exit 0
fi
failed=0
for command in ls select extract check load devices; do
  if ! diff -u "$golden/$command.txt" "$work/out/$command.txt"; then
    echo "FAIL: $command: the rendering differs from $golden/$command.txt (run with --update to rewrite it)"
    failed=$((failed + 1))
  fi
done
echo "cli golden: $((6 - failed)) of 6 commands as their golden files"
[ "$failed" -eq 0 ]
