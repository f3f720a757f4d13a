#!/usr/bin/env bash
# The repository stands alone: no file of it may cite reading material kept
# outside it (a sibling directory of notes, or the user reports the project
# grew from). A citation names the repository's docs/ instead.
#
# Usage: standalone_test.sh SOURCE_DIR
# Files: `git ls-files` when SOURCE_DIR is a git checkout, else every file
# under it except .git and build directories. Binary files are skipped.
set -euo pipefail
src=${1:?usage: standalone_test.sh SOURCE_DIR}
cd "$src"

# Built from pieces so that this script does not match its own pattern.
notes="sha""red"
reports="se""eds"
pattern="(^|[^A-Za-z0-9_])(${notes}|${reports})/|\.\./(${notes}|${reports})([^A-Za-z0-9_]|$)|[Ss]${reports:1}? 00[0-9]"

list_files() {
  if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git ls-files -z
  else
    find . -path ./.git -prune -o -path './build*' -prune -o -type f -print0
  fi
}

hits=$(list_files | xargs -0 grep -I -n -E -s -- "$pattern" || true)
if [ -n "$hits" ]; then
  echo "FAIL: these lines cite paths outside the repository (cite docs/ instead):"
  echo "$hits" | head -50
  exit 1
fi
echo "ok: $(list_files | tr -cd '\0' | wc -c) files, none cites a path outside the repository"
