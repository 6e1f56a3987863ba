#!/usr/bin/env bash
# scripts/format.sh - applies .clang-format (120 columns) to C and C++ sources.
#
#   scripts/format.sh [--check] [FILE ...]
#
# With no FILE, the C/C++ files changed against HEAD (staged, unstaged and
# untracked). --check changes nothing: it lists the files that would change
# and exits 1 if there are any.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
check=0
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
CLANG_FORMAT=$(command -v clang-format || command -v clang-format-14 || true)
[ -n "$CLANG_FORMAT" ] || { echo "format: clang-format not found (apt-get install clang-format)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  mapfile -t files < <({ git diff --name-only HEAD; git ls-files --others --exclude-standard; } |
                       grep -E '\.(c|cc|cpp|h|hpp)$' | sort -u || true)
else
  files=("$@")
fi
[ ${#files[@]} -gt 0 ] || { echo "format: no C/C++ files to format"; exit 0; }
changed=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if [ $check -eq 1 ]; then
    if ! "$CLANG_FORMAT" --style=file "$f" | cmp -s - "$f"; then echo "$f"; changed=1; fi
  else
    "$CLANG_FORMAT" --style=file -i "$f"
  fi
done
exit $changed
