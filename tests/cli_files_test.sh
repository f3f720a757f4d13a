#!/usr/bin/env bash
# End-to-end test of what the coload CLI requires of the files it is given
# and writes (docs/reading-rules.md, "Files"): a FIFO named as an input, an
# output that is also an input, a failed write over an existing file, file
# names that are not UTF-8 in --json, and COLOAD_* variables in a setuid run.
set -uo pipefail
coload=$1
fixtures=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export COLOAD_VERIFY_CACHE=off
passed=0
failed=0
check() {  # check NAME COMMAND...: the command must succeed
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $name"; fi
}
two_arch="$fixtures/bundles/driver_two_arch.hipfb"
gfx90a=hipv4-amdgcn-amd-amdhsa--gfx90a

# A FIFO named as an input is refused at once, not waited on (nothing writes it).
mkfifo "$work/fifo"
timeout 10 "$coload" ls "$work/fifo" > /dev/null 2> "$work/err"
check "ls a FIFO: exit 1, not a hang" test $? -eq 1
check "ls a FIFO: named" grep -q "$work/fifo: not a regular file (a FIFO)" "$work/err"
ln -s "$work/fifo" "$work/fifo_link"
timeout 10 "$coload" select --device gfx90a "$work/fifo_link" > /dev/null 2>&1
check "select through a symlink to a FIFO: exit 1, not a hang" test $? -eq 1
# A symlink to a regular file is read as the file.
ln -s "$two_arch" "$work/link.hipfb"
check "ls through a symlink to a regular file" "$coload" ls "$work/link.hipfb" > /dev/null

# Several outputs OUT.N, OUT.0 being the input (plain bundles: the entries
# are views of the input's mapping): every output is written whole.
cat "$two_arch" "$two_arch" > "$work/two.0"
"$coload" extract --target "$gfx90a" -o "$work/two" "$work/two.0" > /dev/null 2> "$work/err"
check "extract over its own input: exit 0" test $? -eq 0
"$coload" extract --target "$gfx90a" -o "$work/want.co" "$two_arch"
check "extract over its own input: OUT.0 whole" cmp -s "$work/two.0" "$work/want.co"
check "extract over its own input: OUT.1 whole" cmp -s "$work/two.1" "$work/want.co"

# An output that is a hard link to the input (written in place, as hard
# links are) is refused while the input is read from its mapping; the input
# is left whole.
cat "$two_arch" "$two_arch" > "$work/linked_input"
cp "$work/linked_input" "$work/linked_input.copy"
ln "$work/linked_input" "$work/linked.0"
"$coload" extract --target "$gfx90a" -o "$work/linked" "$work/linked_input" > /dev/null 2> "$work/err"
check "extract over a hard link to its input: exit 1" test $? -eq 1
check "extract over a hard link to its input: named" \
  grep -q "$work/linked.0: not written: a hard link to an input this command reads in place" "$work/err"
check "extract over a hard link to its input: the input whole" cmp -s "$work/linked_input" "$work/linked_input.copy"

# A write that fails (RLIMIT_FSIZE of 4 KiB, SIGXFSZ ignored) leaves the old
# file as it was, its mode too, and no temporary file beside it.
mkdir "$work/limited"
head -c 1048576 /dev/zero | tr '\0' x > "$work/limited/old.co"
chmod 640 "$work/limited/old.co"
cp -p "$work/limited/old.co" "$work/old.copy"
(ulimit -f 4; trap '' XFSZ; exec "$coload" extract --target "$gfx90a" -o "$work/limited/old.co" "$two_arch") \
  2> "$work/err"
check "failed write: exit 1" test $? -eq 1
check "failed write: named" grep -q "$work/limited/old.co: write failed: File too large" "$work/err"
check "failed write: the old file whole" cmp -s "$work/limited/old.co" "$work/old.copy"
check "failed write: no temporary left" test "$(ls -A "$work/limited")" = old.co
"$coload" extract --target "$gfx90a" -o "$work/limited/old.co" "$two_arch"
check "write over a file: its mode kept" test "$(stat -c %a "$work/limited/old.co")" = 640
check "write over a file: the new bytes" cmp -s "$work/limited/old.co" "$work/want.co"

# A file with another hard link is written in place (the link sees the new
# bytes); a write past RLIMIT_FSIZE fails before any byte changes.
head -c 2048 /dev/zero | tr '\0' y > "$work/limited/linked.co"
ln "$work/limited/linked.co" "$work/limited/linked.other"
cp "$work/limited/linked.co" "$work/linked.copy"
(ulimit -f 4; trap '' XFSZ; exec "$coload" extract --target "$gfx90a" -o "$work/limited/linked.co" "$two_arch") \
  2> "$work/err"
check "failed write over a hard-linked file: exit 1" test $? -eq 1
check "failed write over a hard-linked file: the old file whole" cmp -s "$work/limited/linked.co" "$work/linked.copy"
"$coload" extract --target "$gfx90a" -o "$work/limited/linked.co" "$two_arch"
check "write over a hard-linked file: its link sees the new bytes" cmp -s "$work/limited/linked.other" "$work/want.co"

# File names that are not UTF-8: --json stays valid JSON, the bytes escaped
# as PEP 383 lone surrogates (docs/cli-json.md, "Names that are not UTF-8").
odd=$(printf '%s/na\xffme\xc3\x28.hipfb' "$work")
cp "$two_arch" "$odd"
for command in "ls --json" "select --json --device gfx90a" "check --json --device gfx90a"; do
  $coload $command "$odd" > "$work/odd.json" 2> /dev/null
  check "$command: valid JSON naming a non-UTF-8 file" python3 -c '
import json, os, sys
doc = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
if "file" in doc:
    assert doc["file"].encode("utf-8", "surrogateescape") == os.fsencode(sys.argv[2]), doc["file"]
' "$work/odd.json" "$odd"
done

# A setuid program reads no COLOAD_* variable (secure_getenv): run by an
# unprivileged user, it loads no plugin that user names.
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: setuid run: needs root to make a setuid copy and run it as nobody (65534)"
else
  mkdir -m 755 "$work/suid"
  chmod 755 "$work"
  cp "$coload" "$work/suid/coload"
  chmod 4755 "$work/suid/coload"
  cp "$two_arch" "$work/suid/input.hipfb"
  chmod 644 "$work/suid/input.hipfb"
  setpriv --reuid=65534 --regid=65534 --clear-groups env COLOAD_HOTSWAP=1 \
    COLOAD_HOTSWAP_PLUGIN="$work/suid/absent_plugin.so" COLOAD_LOG=nonsense \
    "$work/suid/coload" select --device gfx90a "$work/suid/input.hipfb" > "$work/suid.out" 2>&1
  check "setuid run: COLOAD_* ignored, exit 0" test $? -eq 0
  check "setuid run: no plugin named" bash -c "! grep -q absent_plugin '$work/suid.out'"
fi

echo "cli files: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
