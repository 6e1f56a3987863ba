#!/usr/bin/env bash
# tests/style/check_style_test.sh SRC WORK - scripts/check_style.py passes on the
# tree and catches each rule it enforces in a tree made to break them.
set -euo pipefail
SRC=$1
WORK=$2
CHECK="/usr/bin/python3 $SRC/scripts/check_style.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

$CHECK --root "$SRC" || fail "the tree breaks its own rules (above)"

rm -rf "$WORK" && mkdir -p "$WORK/lib/a" "$WORK/docs/notes" "$WORK/tools"
cd "$WORK"
echo "# kiln" > README.md
echo "[guide](docs/guide.md#usage)" >> README.md
printf '# Guide\n\n## Usage (2026-11-30)\n\nSee [gone](missing.md) and docs/guide.md, "Nowhere".\n' > docs/guide.md
printf '# Notes\n\n## Tried (2026-11-30)\n' > docs/notes/log.md
{
  echo "// lib/a/a.cpp"
  echo "// Tuned on the Intel VM."
  echo "int f() {"
  for i in $(seq 1 160); do echo "  int x$i = $i;"; done
  echo "  return 0;"
  echo "}"
} > lib/a/a.cpp
{ for i in $(seq 1 30); do echo "// header line $i"; done; echo "int g();"; } > lib/a/b.h
printf '// Measured 2026-11-29 on an H100.\nint h() { return 1; }\n' > tools/t.cpp

if out=$($CHECK --root "$WORK"); then fail "a broken tree passed"; fi
echo "$out"
expect() { grep -q -- "$1" <<< "$out" || fail "not reported: $1"; }
expect "comments: lib/a/a.cpp:2: a machine in a comment"
expect "comments: tools/t.cpp:1: a date in a comment"
expect "functions: lib/a/a.cpp:3: a 163-line function"
expect "headers: lib/a/b.h:1: a 30-line file header"
expect "docs: docs/guide.md:3: a dated heading"
expect "links: README.md:2: docs/guide.md#usage: no such heading"
expect "links: docs/guide.md:5: missing.md: no such file"
expect "links: docs/guide.md:5: docs/guide.md has no section \"Nowhere\""
grep -q "docs/notes/log.md" <<< "$out" && fail "docs/notes/ may carry dates"
# README size
head -c 11000 /dev/zero | tr '\0' 'x' >> README.md
out=$($CHECK --root "$WORK") || true
grep -q "readme: README.md: .* bytes, over 10 KiB" <<< "$out" || fail "a large README passed"
echo "check_style_test: ok"
