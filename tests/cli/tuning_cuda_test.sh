#!/usr/bin/env bash
# tests/cli/tuning_cuda_test.sh - `kiln tune --target cuda` on a GPU (issue 8):
# a few trials on a tiny model with the CUDA measurer (NVRTC cubins for the
# device, CUDA events), warm and with --flush-l2; the report's target and
# device, its curves, and the database records. Exits 77 (skipped) where
# there is no GPU or driver (KE5005).
# Usage: tuning_cuda_test.sh <kiln> <source dir> <work dir>
set -euo pipefail
KILN=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
MODEL=$SRC/models/tiny/resnet_tiny-default.onnx
source "$SRC/tests/cli/expect.sh"
FAST=(--repeats 3 --min-sample-ms 0.2 --batch 4 --tasks 2)
if ! "$KILN" tune "$MODEL" --target cuda --trials 8 "${FAST[@]}" --db db.jsonl --json report.json > tune.txt 2> tune.err; then
  if grep -q "KE5005" tune.err; then echo "no CUDA device: skipped"; cat tune.err; exit 77; fi
  cat tune.err; fail "kiln tune --target cuda failed"
fi
expect_in "tuned " tune.txt
"$KILN" tune "$MODEL" --target cuda --trials 4 --flush-l2 "${FAST[@]}" --db db.jsonl --json cold.json > cold.txt 2> cold.err \
  || { cat cold.err; fail "kiln tune --target cuda --flush-l2 failed"; }
/usr/bin/python3 - report.json cold.json db.jsonl <<'PY'
import json, sys
for path, trials in ((sys.argv[1], 8), (sys.argv[2], 4)):
    r = json.load(open(path))
    assert r['target'] == 'cuda' and '(sm_' in r['device'] and r['trials'] == trials, r
    for t in r['tasks']:
        assert t['signature'].split('-')[1] == 'cuda', t
        c = t['curve_ms']
        assert len(c) == t['trials'] + 1 and all(b <= a for a, b in zip(c, c[1:])), t
        if t['trials']:
            assert 0 < t['best_ms'] <= t['default_ms'], t
lines = [json.loads(l) for l in open(sys.argv[3])]
assert all(l['target'] == 'cuda' and 'NVRTC' in l['toolkit'] for l in lines), lines[0]
ok = [l for l in lines if l['status'] == 'ok']
assert len(ok) >= 12 and all(l['ms'] > 0 for l in ok), len(ok)
print('cuda tuning:', len(lines), 'records on', lines[0]['device'])
PY
echo "CUDA tuning CLI: all checks passed"
