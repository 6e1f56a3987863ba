#!/usr/bin/env bash
# tests/models/check_export_deterministic.sh - the zoo export is deterministic:
# exporting the tiny models again gives the committed files byte for byte.
# Usage: check_export_deterministic.sh <source dir> <work dir>
set -euo pipefail
SRC=$1
WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK"
/usr/bin/python3 "$SRC/models/export_models.py" --out "$WORK" --size tiny 2> "$WORK/export.log" \
  || { cat "$WORK/export.log"; exit 1; }
status=0
for committed in "$SRC"/models/tiny/*-default.onnx "$SRC"/models/tiny/*-raw.onnx; do
  name=$(basename "$committed")
  if ! cmp -s "$committed" "$WORK/$name"; then
    echo "FAIL: $name differs from a fresh export (was the script changed without re-exporting models/tiny?)"
    status=1
  fi
done
[ "$(ls "$WORK"/*.onnx | wc -l)" -eq 10 ] || { echo "FAIL: expected 10 tiny models"; status=1; }
[ $status -eq 0 ] && echo "10 tiny models re-export byte-identically"
exit $status
