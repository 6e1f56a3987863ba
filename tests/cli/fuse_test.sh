#!/usr/bin/env bash
# tests/cli/fuse_test.sh - `kiln fuse` driven as a user would (issue 68): a
# few trials of random search on a tiny model, its record and plan, the plan
# applied with `kiln compile --fusion-plan` (the artifact computes what the
# interpreter computes), a rerun replayed from --db, every kept
# configuration confirmed (--confirm-kept), Gibbs-sampling datasets of two
# models, an advantage model trained on them, guided and ranked
# search with it and with the model kiln ships, and the errors.
# Usage: fuse_test.sh <kiln> <source dir> <work dir>
set -euo pipefail
KILN=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
source "$SRC/tests/cli/expect.sh"
TINY=$SRC/models/tiny

"$KILN" fuse --help > help.txt
for flag in --strategy --advantage-model --trials --from --collect --train --score --db --confirm-pairs --confirm-kept; do expect_in "$flag" help.txt; done

# Random search: its record, its plan, and the plan compiled.
MODEL=$TINY/resnet_tiny-raw.onnx
"$KILN" fuse "$MODEL" --trials 8 --seed 3 --accept-pairs 0 --confirm-pairs 5 -o plan.txt --json first.json --db db.jsonl \
  > search.txt 2> progress.txt
expect_in "8 trials of random" search.txt
expect_in "kept      " search.txt
expect_in "kiln fuse: trial 8/8" progress.txt
expect_in "edge e0 " plan.txt
"$KILN" compile "$MODEL" --fusion-plan plan.txt -o searched.kiln --quiet
"$KILN" run searched.kiln --backend cpu --output-dir searched > /dev/null
"$KILN" run "$MODEL" --backend interpreter --output-dir reference > /dev/null
same_outputs reference searched

# The same search again, replayed from the database: the same trials, nothing compiled or timed.
"$KILN" fuse "$MODEL" --trials 8 --seed 3 --accept-pairs 0 --confirm-pairs 5 --json again.json --db db.jsonl --quiet > /dev/null
/usr/bin/python3 - <<'PY'
import json
first, again = json.load(open("first.json")), json.load(open("again.json"))
assert first["schema"] == "kiln-fuse/1" and first["strategy"] == "random", first
trials = first["trials"]
assert len(trials) == 9 and trials[0]["trial"] == 0, len(trials)
configs = [t["config"] for t in trials[1:]]
assert len(set(configs)) == len(configs), "a search trial repeated a configuration"
assert all(t["status"] == "ok" and t["ms"] > 0 for t in trials), trials
assert all(not t["replayed"] for t in trials[1:]), "the first search replayed"
best = [t["best_ms"] for t in trials]
assert all(b >= a for a, b in zip(best[1:], best)), ("best-so-far rose", best)
assert [t["config"] for t in again["trials"]] == [t["config"] for t in trials], "the replayed search took other trials"
assert all(t["replayed"] and t["kernels_compiled"] == 0 for t in again["trials"][1:]), again["trials"]
print("random search: 8 distinct trials, replayed exactly from --db")
PY

# --from PLAN: a search starts from a saved plan's configuration (here with no trials: the plan
# against the default in a fresh process, as the study re-confirms its kept plans).
"$KILN" fuse "$MODEL" --from plan.txt --trials 0 --confirm-pairs 3 --json from-plan.json --quiet > /dev/null
/usr/bin/python3 - <<'PY'
import json
# edge <id> <producer> -> <consumer> <kind> fuse|split [note]
plan = "".join("1" if l.split()[6] == "fuse" else "0" for l in open("plan.txt") if l.startswith("edge "))
start = json.load(open("from-plan.json"))["trials"][0]
assert start["config"] == plan, ("the search did not start from plan.txt", start["config"], plan)
print("--from plan.txt: started from the plan's configuration")
PY
sed 's/^edge e0 [^ ]*/edge e0 no_such_node/' plan.txt > wrong-plan.txt
expect_fail "wrong-plan.txt: fusion plan line 2" "$KILN" fuse "$MODEL" --from wrong-plan.txt --trials 0
expect_fail "--from" "$KILN" fuse "$MODEL" --from missing-plan.txt --trials 0

# --confirm-kept: every kept configuration that is not the default (the random start included) is
# confirmed against the default, and the last confirmation is the final one.
"$KILN" fuse "$MODEL" --trials 4 --seed 5 --from random --confirm-kept --confirm-pairs 3 --json kept.json --quiet > /dev/null
/usr/bin/python3 - <<'PY'
import json
record = json.load(open("kept.json"))
trials = record["trials"]
confirmed = [t for t in trials if t["confirmed_ratio"] is not None]
assert trials[0]["kept"] and trials[0]["confirmed_ratio"] > 0, trials[0]
assert all(t["kept"] for t in confirmed), "a trial the search did not keep was confirmed"
assert all(t["confirmed_ratio"] is not None for t in trials if t["kept"]), "a kept trial was not confirmed"
assert record["confirmed_ratio"] == confirmed[-1]["confirmed_ratio"], "the final confirmation is not the last one"
print(f"--confirm-kept: {len(confirmed)} kept configurations confirmed")
PY

# Gibbs-sampling datasets, an advantage model, and guided / ranked search with it.
"$KILN" fuse "$TINY/tiny_cnn.onnx" --collect cnn.jsonl --quiet > collect.txt
expect_in "samples of" collect.txt
"$KILN" fuse "$MODEL" --collect resnet.jsonl --temperature 0.02 --quiet > /dev/null
head -1 resnet.jsonl > header.txt
expect_in '"schema":"kiln-fuse-data/1"' header.txt
[ "$(wc -l < resnet.jsonl)" -gt 20 ] || fail "resnet_tiny's dataset has $(wc -l < resnet.jsonl) lines"
"$KILN" fuse --train cnn.jsonl resnet.jsonl -o advantage.json > train.txt
expect_in "trained the advantage model on 2 dataset(s)" train.txt
expect_in "rank correlation" train.txt
# --score: a model trained on one graph scored on another's dataset.
"$KILN" fuse --train cnn.jsonl -o cnn-only.json > /dev/null
"$KILN" fuse --score resnet.jsonl --advantage-model cnn-only.json --json score.json > score.txt
expect_in "resnet_tiny-raw.onnx: $(($(wc -l < resnet.jsonl) - 1)) samples, rank correlation" score.txt
/usr/bin/python3 - <<'PY' || fail "--score's record"
import json
r = json.load(open("score.json"))
assert r["schema"] == "kiln-advantage-score/1" and r["trained_on"] == ["tiny_cnn.onnx"], r
(d,) = r["datasets"]
assert d["model"] == "resnet_tiny-raw.onnx" and d["samples"] > 20, d
assert -1 <= d["rank_correlation"] <= 1 and 0 <= d["top_recall"] <= 1 and 0 <= d["top_sign_agreement"] <= 1, d
PY
"$KILN" fuse --score cnn.jsonl > shipped-score.txt
expect_in "data/advantage/cpu.json (trained on" shipped-score.txt
for strategy in guided ranked; do
  "$KILN" fuse "$TINY/mobilenet_tiny-raw.onnx" --strategy $strategy --advantage-model advantage.json --trials 6 \
    --json $strategy.json --quiet > $strategy.txt
  expect_in "6 trials of $strategy" $strategy.txt
done
# Without --advantage-model, the model kiln ships for the target.
"$KILN" fuse "$TINY/mobilenet_tiny-raw.onnx" --strategy guided --trials 3 --json shipped.json --quiet > /dev/null
expect_in "data/advantage/cpu.json" shipped.json

# Errors.
expect_fail "measures on this CPU" "$KILN" fuse "$MODEL" --target cuda
expect_fail "kiln fuse needs a model" "$KILN" fuse
expect_fail "--train needs -o" "$KILN" fuse --train cnn.jsonl
expect_fail "missing.json" "$KILN" fuse "$MODEL" --strategy guided --advantage-model missing.json
printf '{"schema":"kiln-fuse-data/1","features":[]}\n' > stale.jsonl
expect_fail "other edge features" "$KILN" fuse --train stale.jsonl -o m.json
head -1 resnet.jsonl > corrupt.jsonl && echo '{"features": [1]}' >> corrupt.jsonl
expect_fail "corrupt.jsonl:2: a sample needs" "$KILN" fuse --train corrupt.jsonl -o m.json
expect_fail "corrupt.jsonl:2: a sample needs" "$KILN" fuse --score corrupt.jsonl
expect_fail "not an advantage model" "$KILN" fuse --score cnn.jsonl --advantage-model cnn.jsonl
echo "not json" > bad-db.jsonl
expect_fail "bad-db.jsonl:1: not a JSON object" "$KILN" fuse "$MODEL" --db bad-db.jsonl --trials 1
echo "kiln fuse: ok"
