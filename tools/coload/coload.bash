# bash completion for coload (installed as share/bash-completion/completions/coload).
#
# Nothing is listed here: the commands come from `coload --help` and a
# command's options from `coload CMD --help`, whose text the option tables of
# tools/coload/options.cpp generate, so a new command or option completes
# without touching this file. Completes the command word; a command's options;
# a choice option's values (`--runtime hsa|hip|dry-run` in the help); file
# names otherwise. Uses no bash-completion helper, so it also works when
# sourced alone.

# The helpers read a help text whatever the tool's exit status (an unknown
# command's --help fails and prints nothing to read), so that completion
# works, and says nothing, in a shell with `set -euo pipefail` as well.

# The commands `coload --help` lists: a line of its "commands:" block starts
# with two spaces and the command's name.
_coload_commands() {
  { "$1" --help 2>/dev/null || true; } | awk '/^commands:/ { in_list = 1; next }
    in_list && /^  [a-z]/ && !seen[$1]++ { print $1 }'
}

# The options of `coload --help` itself (--help, --version), from its usage lines.
_coload_global_options() {
  { "$1" --help 2>/dev/null || true; } | awk '/^$/ { exit } { for (i = 1; i <= NF; ++i) if ($i ~ /^--/) print $i }' | sort -u
}

# One line per option of command $2: each spelling of the option (-h, --help),
# then its value's name when it takes one (`--runtime hsa|hip|dry-run`). An
# option line of `coload CMD --help` starts with two spaces and a dash; two
# spaces part the option from its description.
_coload_option_lines() {
  { "$1" "$2" --help 2>/dev/null || true; } | awk '/^  -/ {
      sub(/^  /, ""); sub(/  .*/, ""); gsub(/,/, "")
      print
    }'
}

_coload() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local prev=${COMP_WORDS[COMP_CWORD - 1]}
  local tool
  tool=$(type -P -- "${COMP_WORDS[0]}") || return 0
  COMPREPLY=()

  if ((COMP_CWORD == 1)); then
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$(_coload_global_options "$tool")" -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -W "$(_coload_commands "$tool")" -- "$cur")
    fi
    return 0
  fi

  local command=${COMP_WORDS[1]}
  local lines
  lines=$(_coload_option_lines "$tool" "$command")

  # The word after an option that takes a value: the value's choices when the
  # help spells them a|b|c, else file names.
  local spelling value_name
  while read -r -a spelling; do
    local n=${#spelling[@]}
    ((n >= 2)) || continue
    value_name=${spelling[n - 1]}
    [[ $value_name == -* ]] && continue  # "-h --help": no value
    local i
    for ((i = 0; i < n - 1; ++i)); do
      if [[ ${spelling[i]} == "$prev" ]]; then
        if [[ $value_name == *'|'* ]]; then
          mapfile -t COMPREPLY < <(compgen -W "${value_name//|/ }" -- "$cur")
        else
          _coload_files "$cur"
        fi
        return 0
      fi
    done
  done <<<"$lines"

  if [[ $cur == -* ]]; then
    local options
    options=$(awk '{ for (i = 1; i <= NF; ++i) if ($i ~ /^-/) print $i }' <<<"$lines")
    mapfile -t COMPREPLY < <(compgen -W "$options" -- "$cur")
  else
    _coload_files "$cur"
  fi
  return 0
}

# File names starting with $1, shown and quoted as readline shows file names
# (compopt fails outside a completion, e.g. when a test calls _coload).
_coload_files() {
  compopt -o filenames 2>/dev/null || true
  mapfile -t COMPREPLY < <(compgen -f -- "$1")
}

complete -F _coload coload
