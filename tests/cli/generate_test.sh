#!/usr/bin/env bash
# tests/cli/generate_test.sh - greedy decoding with a KV cache through one
# artifact: the tiny GPT decoder (models/tiny/gpt_tiny-*.onnx) compiled once
# with ranges for its sequence (1..16) and cache length (0..160) runs a
# 128-token `kiln generate` loop whose tokens equal ONNX Runtime's loop
# (scripts/ort_generate.js) exactly, in both export forms and from two
# prompts; `kiln inspect` shows the ranges; the decoder's misuses are clear errors.
# Usage: generate_test.sh <kiln> <source dir> <work dir>
set -euo pipefail
KILN=$1
SRC=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
source "$SRC/tests/cli/expect.sh"

# name:dims for the decoder's inputs at `seq` tokens over a cache of `past`.
shapes() {
  local p=past_key_values
  echo "input_ids:1x$1,$p.0.key:1x4x$2x16,$p.0.value:1x4x$2x16,$p.1.key:1x4x$2x16,$p.1.value:1x4x$2x16"
}

"$KILN" generate --help > help.txt
expect_in "--prompt" help.txt
for form in raw default; do
  MODEL=$SRC/models/tiny/gpt_tiny-$form.onnx
  "$KILN" compile "$MODEL" --min-shapes "$(shapes 1 0)" --opt-shapes "$(shapes 1 64)" --max-shapes "$(shapes 16 160)" \
    -o "gpt-$form.kiln" --quiet > compile.txt
  ! grep -q "host steps" compile.txt || fail "gpt_tiny-$form compiles to host steps: $(cat compile.txt)"
  "$KILN" inspect "gpt-$form.kiln" > inspect.txt
  expect_in "past: 0..160 (opt 64)" inspect.txt
  expect_in "seq: 1..16 (opt 1)" inspect.txt
  expect_in "present.1.value: f32[1,4,(seq + past),16]" inspect.txt
  for prompt in 5,17,42 7; do
    "$KILN" generate "gpt-$form.kiln" --prompt "$prompt" --tokens 128 --json > kiln.json
    node "$SRC/scripts/ort_generate.js" "$MODEL" --prompt "$prompt" --tokens 128 > ort.json
    /usr/bin/python3 - "$form" "$prompt" <<'PY'
import json, sys
kiln, ort = json.load(open("kiln.json")), json.load(open("ort.json"))
assert len(kiln["tokens"]) == 128, kiln
assert len(set(kiln["tokens"])) > 10, ("a degenerate decode", kiln["tokens"])
first = next((i for i, (a, b) in enumerate(zip(kiln["tokens"], ort["tokens"])) if a != b), None)
assert first is None, (sys.argv[1:], "token", first, kiln["tokens"][first:first + 5], ort["tokens"][first:first + 5])
print(f"gpt_tiny-{sys.argv[1]} prompt {sys.argv[2]}: 128 tokens equal ONNX Runtime's; "
      f"kiln {kiln['tokens_per_s']:.0f} tokens/s, ONNX Runtime {ort['tokens_per_s']:.0f}")
PY
  done
done

# The text report.
"$KILN" generate gpt-raw.kiln --prompt 5,17,42 --tokens 8 > text.txt
expect_in "prompt   3 tokens in one step" text.txt
expect_in "tokens   8 new:" text.txt
expect_in "tokens/s over 7 steps" text.txt

# Misuses.
expect_fail "decoder: a prompt of 17 tokens; the model takes 1..16 in one step" \
  "$KILN" generate gpt-raw.kiln --prompt 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
expect_fail "need a cache of 161 tokens; the model's serves up to 160" "$KILN" generate gpt-raw.kiln --prompt 1,2 --tokens 161
"$KILN" generate gpt-raw.kiln --prompt 1,2 --tokens 160 --json > edge.json
expect_fail "kiln generate runs a compiled artifact (.kiln)" "$KILN" generate "$SRC/models/tiny/gpt_tiny-raw.onnx"
"$KILN" compile "$SRC/models/tiny/gpt_tiny-raw.onnx" --min-shapes "$(shapes 1 1)" --max-shapes "$(shapes 16 160)" \
  -o from1.kiln --quiet > /dev/null
expect_fail "decoder: input 'past_key_values.0.key' dim 2 serves 1..160; decoding starts from an empty cache, so its range must start at 0" \
  "$KILN" generate from1.kiln
expect_fail "decoder: the model has no input 'tokens'" "$KILN" generate gpt-raw.kiln --tokens-input tokens
expect_fail "decoder: the model has no output 'next.0.key'" "$KILN" generate gpt-raw.kiln --present-prefix next.
"$KILN" compile "$SRC/models/tiny/tiny_cnn.onnx" --min-shapes input:1x3x32x32 --max-shapes input:4x3x32x32 -o cnn.kiln --quiet > /dev/null
expect_fail "decoder: the model has no input 'input_ids'" "$KILN" generate cnn.kiln
echo "generate: ok"
