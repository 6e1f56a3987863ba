#!/usr/bin/env bash
# tests/cli/evolve_test.sh - `kiln evolve` driven as a user would (issue 69):
# the digits task's data made by models/digits/digits_task.py, a short
# search on the digits CNN (the front's table, JSON and chart; crossover
# children and repaired variants admitted; each member's patch, ONNX model
# and artifact computing the same), a member's patch re-applied with
# --apply, and the errors.
# Usage: evolve_test.sh <kiln> <source dir> <work dir>
set -euo pipefail
KILN=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
source "$SRC/tests/cli/expect.sh"
MODEL=$SRC/models/digits/digits_cnn.onnx

/usr/bin/python3 "$SRC/models/digits/digits_task.py" data data
"$KILN" evolve --help > help.txt
for flag in --data --out --metric --population --generations --elites --initial-edits --apply --seed \
  --max-evaluations --max-seconds --confirm-pairs; do expect_in "$flag" help.txt; done

"$KILN" evolve "$MODEL" --data data/cnn --population 8 --generations 2 --elites 4 --seed 1 --confirm-pairs 3 \
  --out front > table.md 2> progress.txt
expect_in "kiln evolve: 1437 training and 360 test samples" progress.txt
expect_in "kiln evolve: generation 2/2  front " progress.txt
expect_in "| original |" table.md
expect_in "## Member 0" table.md
expect_in "<svg" front/front.svg
/usr/bin/python3 - <<'PY'
import json, os
import numpy as np
r = json.load(open("front/front.json"))
assert r["schema"] == "kiln-evolve-front/1" and r["metric"] == "top1", r
assert r["generations"] == 2 and r["evaluations"] > 8, r
assert r["crossovers"] > 0, "no crossover child was admitted"
original = r["original"]
assert 0 < original["ms"] and original["train_error"] < 0.01 and original["test_error"] < 0.06, original
front = r["front"]
assert front, "an empty front"
for k, m in enumerate(front):
    assert m["ms"] > 0 and len(m["report"]) == len(m["edits"]), m  # a line per edit (the original has none)
    for ext in ("patch.json", "onnx", "kiln"):
        assert os.path.getsize(f"front/member-{k}.{ext}") > 0, (k, ext)
assert all(a["ms"] <= b["ms"] and a["train_error"] >= b["train_error"] for a, b in zip(front, front[1:])), front
np.save("sample.npy", np.load("data/cnn/test/image.npy")[0])
print(f"kiln evolve: {len(front)} front members, {r['evaluations']} evaluated, {r['crossovers']} crossovers")
PY

# A member's patch re-applied to the model gives its ONNX model; its artifact computes the same.
"$KILN" evolve --apply front/member-0.patch.json "$MODEL" -o applied.onnx > apply.txt
expect_in "edits applied" apply.txt
"$KILN" run front/member-0.onnx --input image=sample.npy --output-dir member > /dev/null
"$KILN" run applied.onnx --input image=sample.npy --output-dir applied > /dev/null
"$KILN" run front/member-0.kiln --backend cpu --input image=sample.npy --output-dir artifact > /dev/null
same_outputs member applied
same_outputs member artifact

# Errors: a patch naming what the model lacks, data without the model's input, an unknown metric.
cat > bad.patch.json <<'JSON'
{"schema": "kiln-patch/1", "edits": [{"edit": "delete", "node": "no_such_value", "with": ["image"]}]}
JSON
expect_fail "KE2003" "$KILN" evolve --apply bad.patch.json "$MODEL" -o bad.onnx
expect_in "edit 0 (delete 'no_such_value'): the graph has no node" err.txt
echo '{"schema": "kiln-patch/1", "edits": [' > truncated.patch.json
expect_fail "KE2003" "$KILN" evolve --apply truncated.patch.json "$MODEL" -o bad.onnx
expect_fail "has no image.npy for the model's input 'image'" "$KILN" evolve "$MODEL" --data data/mlp --out bad
expect_fail "--metric must be top1, mae or agreement" "$KILN" evolve "$MODEL" --data data/cnn --metric f1 --out bad
expect_fail "needs --data DIR and --out DIR" "$KILN" evolve "$MODEL"
echo "evolve CLI: ok"
