#!/usr/bin/env bash
# Writes the help2man include file of coload's man page (run at build time by
# tools/coload/man_and_completion.cmake), each part taken from where it is
# kept. From `coload --help` (main.cpp's usage text): SYNOPSIS (its usage
# lines) and DESCRIPTION (its commands, one tagged paragraph each: help2man
# reads only GNU-style help, and would run the commands' synopses together).
# From `coload CMD --help` (the option tables of tools/coload/options.cpp):
# COMMAND OPTIONS, a subsection per command. From docs/environment.md:
# ENVIRONMENT, the COLOAD_* variables of its table, pointing there for the rest.
#
# usage: man_sections.sh TOOL ENVIRONMENT_MD DOCDIR OUT
#   DOCDIR: where the docs are installed, relative to the prefix (share/doc/coload)
set -euo pipefail

if (($# != 4)); then
  echo "usage: $0 TOOL ENVIRONMENT_MD DOCDIR OUT" >&2
  exit 2
fi
tool=$1
environment_md=$2
docdir=$3
out=$4

# roff text from plain text: a backslash is \e and a dash \- (an option's
# dash, not a hyphen). The awk programs below print text lines with text(),
# which keeps a line from starting with a control character.
roff() {
  sed -e 's/\\/\\e/g' -e 's/-/\\-/g'
}
awk_text='function text(line) {
  sub(/^ +/, "", line)
  if (line ~ /^[.\047]/) line = "\\&" line
  print line
}'

# SYNOPSIS from the usage lines (up to the first blank line), DESCRIPTION from
# the commands (a command's synopsis starts at column 2 and may go on at a
# deeper indent; its description is indented by 6) and the notes after them.
# The page turns hyphenation off (.nh): an option name broken at one of its
# hyphens could not be told from two words.
top_level_sections() {
  "$tool" --help | roff | awk "$awk_text"'
    NR == 1 { print "[SYNOPSIS]"; print ".nh"; sub(/^usage:/, "") }
    part == "" && /^$/ { part = "description"; print "[=DESCRIPTION]"; next }
    part == "" { sub(/^ *coload/, ""); print "\\fBcoload\\fR" $0; print ".br"; next }
    /^commands:$/ { part = "commands"; next }
    part == "commands" && /^  [a-z]/ { flush(); sub(/^  /, ""); tag = "\\fB" $1 "\\fR" substr($0, length($1) + 1); next }
    part == "commands" && /^       / && tag != "" && !body { sub(/^ +/, ""); tag = tag " " $0; next }
    part == "commands" && /^      [^ ]/ { if (!body) { print ".TP"; print tag; body = 1 } text($0); next }
    part == "commands" && /^$/ { flush(); next }
    part == "commands" { part = "notes"; print ".PP" }
    part == "notes" && /^$/ { print ".PP"; next }
    part == "notes" { text($0) }
    function flush() { tag = ""; body = 0 }
  '
}

# One command's help as a subsection: the usage line as its title, the
# description as a paragraph, each option as a tagged paragraph (its spellings
# bold, its value's name italic), then the closing notes, except the line
# sending the reader to `coload --help`, which is this page.
command_section() {
  "$tool" "$1" --help | roff | awk "$awk_text"'
    NR == 1 { sub(/^usage: /, ""); print ".SS " $0; next }
    /^options:$/ { part = "options"; next }
    part == "options" && /^  \\-/ {
      line = $0; sub(/^  /, "", line)
      split(line, halves, /  +/)
      count = split(halves[1], spellings, /, /)
      tag = ""
      for (i = 1; i <= count; ++i) {
        words = split(spellings[i], word, / /)
        tag = tag (i > 1 ? ", " : "") "\\fB" word[1] "\\fR"
        for (j = 2; j <= words; ++j) tag = tag " \\fI" word[j] "\\fR"
      }
      print ".TP"; print tag; text(substr(line, length(halves[1]) + 1)); next
    }
    part == "options" && /^   / { text($0); next }
    part == "options" && /^$/ { part = "notes"; print ".PP"; next }
    /^`coload \\-\\-help` describes/ { next }
    /^$/ { print ".PP"; next }
    { text($0) }
  '
}

{
  top_level_sections

  echo "[COMMAND OPTIONS]"
  cat <<'TEXT'
Each command's options, as \fBcoload\fR \fIcommand\fR \fB\-\-help\fR prints them.
TEXT
  "$tool" --help | awk '/^commands:/ { in_list = 1; next } in_list && /^  [a-z]/ && !seen[$1]++ { print $1 }' |
    while read -r command; do
      command_section "$command"
    done

  docdir_roff=$(printf '%s' "$docdir" | roff)
  echo "[ENVIRONMENT]"
  echo "coload reads these variables:"
  echo ".RS"
  # shellcheck disable=SC2016  # the backquotes are the Markdown table's
  sed -n 's/^| `\(COLOAD_[A-Z_]*\)`.*/\\fB\1\\fR\n.br/p' "$environment_md"
  echo ".RE"
  echo ".PP"
  printf '%s\n' 'Their values, defaults and effects are listed in \fIenvironment.md\fR of the coload documentation'
  printf '(\\fI%s/environment.md\\fR under the installation prefix, docs/ in the source tree).\n' "$docdir_roff"

  echo "[SEE ALSO]"
  printf 'The coload documentation, in \\fI%s\\fR under the installation prefix:\n' "$docdir_roff"
  cat <<'TEXT'
\fIcli\-json.md\fR (the documents \fB\-\-json\fR prints), \fIselection.md\fR (how an entry is chosen),
\fIenvironment.md\fR (the COLOAD_* variables).
TEXT
} >"$out"
