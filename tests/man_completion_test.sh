#!/usr/bin/env bash
# The coload tool's man page renders with man(1) and holds the top-level help,
# each command's options and the environment; its bash completion completes
# commands, a command's options and a choice option's values, all read from
# the tool's help (tools/coload/man_and_completion.cmake).
#
# usage: man_completion_test.sh TOOL MAN_PAGE COMPLETION_SCRIPT
set -euo pipefail

if (($# != 3)); then
  echo "usage: $0 TOOL MAN_PAGE COMPLETION_SCRIPT" >&2
  exit 2
fi
tool=$1
man_page=$2
completion=$3

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# --- The man page -----------------------------------------------------------

[[ -f $man_page ]] || { echo "FAIL: no man page at $man_page (help2man missing at configure time?)" >&2; exit 1; }
# LC_ALL=C: plain ASCII output, so \- renders as '-' whatever the locale.
rendered=$(LC_ALL=C MANWIDTH=80 man -l "$man_page" 2>&1) || fail "man -l $man_page failed: $rendered"

expect_line() {  # $1: what, $2: an extended regular expression one line must match
  grep -Eq -- "$2" <<<"$rendered" || fail "man page lacks $1 (/$2/)"
}
# (Words of a filled line may be parted by several spaces.)
expect_line "the NAME line" '^ +coload +- +list, +select, +check +and +load'
expect_line "the version in the footer" "^coload $("$tool" --version | sed 's/^coload //') "
expect_line "a SYNOPSIS line" '^ +coload --version$'
expect_line "the select command in the description" '^ +select +--device +SPEC'
expect_line "the select command's subsection" '^ +coload select \[options\] FILE\.\.\.$'
expect_line "a device option of select" '^ +--co-versions 4,5,6$'
expect_line "load's runtime choices" '^ +--runtime hsa\|hip\|dry-run$'
expect_line "an environment variable" '^ +COLOAD_HASH_CHECK$'
expect_line "the pointer to docs/environment.md" 'environment\.md'
# Each command of `coload --help` has its subsection.
commands=$("$tool" --help | awk '/^commands:/ { in_list = 1; next } in_list && /^  [a-z]/ && !seen[$1]++ { print $1 }')
[[ $(wc -l <<<"$commands") -eq 7 ]] || fail "expected seven commands in coload --help, got: $commands"
for command in $commands; do
  expect_line "the $command subsection" "^ +coload $command \\[options\\]"
done
# No roff warning (a stray control character, an unknown request).
warnings=$(LC_ALL=C groff -man -ww -z "$man_page" 2>&1) || true
[[ -z $warnings ]] || fail "groff warns about $man_page: $warnings"

# --- The completion -----------------------------------------------------------

workdir=$(mktemp -d)
finished=0
on_exit() {
  rm -rf -- "$workdir"
  ((finished)) || echo "FAIL: the test stopped before its end" >&2
}
trap on_exit EXIT
PATH=$(dirname -- "$(realpath -- "$tool")"):$PATH
# shellcheck source=/dev/null
source "$completion"
[[ $(complete -p coload) == *"-F _coload coload"* ]] || fail "the script does not register _coload for coload"

# Completes the words of $1 (the last one empty when $1 ends with a space)
# and compares the sorted candidates with $2 (words separated by spaces).
expect_completion() {
  local line=$1 expected=$2
  read -r -a COMP_WORDS <<<"$line"
  [[ $line == *' ' ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE=$line
  COMP_POINT=${#line}
  COMPREPLY=()
  # Called directly, under this script's `set -euo pipefail`: completion
  # must work in a strict shell too (a failure ends the script, see the trap).
  _coload coload "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  local got
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd ' ')
  [[ $got == "$expected" ]] || fail "completing '$line': expected '$expected', got '$got'"
}

expect_completion "coload se" "select"
expect_completion "coload " "check devices extract load ls run select"
expect_completion "coload --v" "--version"
expect_completion "coload select --j" "--json"
expect_completion "coload select --co" "--co-versions"
expect_completion "coload devices -" "--help --json --runtime -h"
expect_completion "coload load --runtime " "dry-run hip hsa"
expect_completion "coload load --runtime d" "dry-run"
expect_completion "coload devices --runtime " "hip hsa"
# A value that is not a choice, and an operand, complete as file names.
touch "$workdir/kernels.hipfb" "$workdir/other.co"
expect_completion "coload select -o $workdir/ker" "$workdir/kernels.hipfb"
expect_completion "coload ls $workdir/oth" "$workdir/other.co"
# An unknown command has no options, and completion says nothing on stderr.
expect_completion "coload nosuch --j" ""

finished=1
if ((failures > 0)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "man page and completion: all checks passed"
