#!/usr/bin/env node
// scripts/ort_generate.js - ONNX Runtime's greedy decoding loop with a KV cache,
// the reference for `kiln generate`.
//
//   node scripts/ort_generate.js decoder.onnx [--prompt 1,2,3] [--tokens 128] [--threads N]
//        [--tokens-input input_ids] [--logits-output logits] [--past-prefix past_key_values.]
//        [--present-prefix present.]
//
// The loop kiln's GreedyDecoder (include/kiln/Decoder.h) runs: the prompt in
// one step from an empty cache (every past's dynamic axis 0, batch 1), then
// one step per new token, each the argmax of the last logits row (the first
// maximum on ties), the presents becoming the next pasts; an input named
// attention_mask gets ones over the cache and the step's tokens, position_ids
// the step's positions. Prints one JSON record: prompt, tokens, prompt_ms,
// step_ms (mean, p50, p90, p99), tokens_per_s (over the steps after the
// prompt's), the record `kiln generate --json` prints. onnxruntime-node is
// looked up in $KILN_ORT_DIR (default: <repo>/.deps/ort).
'use strict';
const fs = require('fs');
const { loadOrt } = require('./ort_common.js');

const ort = loadOrt('ort_generate');

function parseArgs(args) {
  const o = { prompt: [0], tokens: 128, threads: 0, tokensInput: 'input_ids', logitsOutput: 'logits',
    pastPrefix: 'past_key_values.', presentPrefix: 'present.' };
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--prompt') o.prompt = args[++i].split(',').map(Number);
    else if (a === '--tokens') o.tokens = Number(args[++i]);
    else if (a === '--threads') o.threads = Number(args[++i]);
    else if (a === '--tokens-input') o.tokensInput = args[++i];
    else if (a === '--logits-output') o.logitsOutput = args[++i];
    else if (a === '--past-prefix') o.pastPrefix = args[++i];
    else if (a === '--present-prefix') o.presentPrefix = args[++i];
    else if (a === '-h' || a === '--help') { console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 18).join('\n')); process.exit(0); }
    else if (a.startsWith('-')) throw new Error(`unknown option ${a} (see --help)`);
    else o.model = a;
  }
  if (!o.model) throw new Error('usage: ort_generate.js decoder.onnx [--prompt 1,2,3] [--tokens 128]');
  if (!(o.tokens >= 1) || o.prompt.some(t => !Number.isInteger(t))) throw new Error('--tokens must be >= 1 and --prompt integers');
  return o;
}

/// An empty cache for a past input: batch 1, its symbolic (cache) axis 0.
function emptyPast(meta) {
  const dims = meta.shape.map((d, axis) => (axis === 0 ? 1 : typeof d === 'number' && d >= 0 ? d : 0));
  const count = dims.reduce((a, b) => a * b, 1);
  return new ort.Tensor('float32', new Float32Array(count), dims);
}

function int64Row(values) { return new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), [1, values.length]); }

function percentile(sorted, p) { return sorted[Math.max(1, Math.min(sorted.length, Math.ceil(p / 100 * sorted.length))) - 1]; }

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const options = { graphOptimizationLevel: 'all' };
  if (o.threads > 0) { options.intraOpNumThreads = o.threads; options.interOpNumThreads = 1; }
  const session = await ort.InferenceSession.create(o.model, options);
  const feeds = {};
  const pasts = [];  // [input name, output name]
  for (const meta of session.inputMetadata) {
    if (!meta.name.startsWith(o.pastPrefix)) continue;
    const present = o.presentPrefix + meta.name.slice(o.pastPrefix.length);
    if (!session.outputNames.includes(present)) throw new Error(`past '${meta.name}' has no output '${present}'`);
    pasts.push([meta.name, present]);
    feeds[meta.name] = emptyPast(meta);
  }
  const tokens = [], stepMs = [];
  let promptMs = 0, cache = 0, step = o.prompt.slice();
  while (tokens.length < o.tokens) {
    feeds[o.tokensInput] = int64Row(step);
    if (session.inputNames.includes('attention_mask')) feeds.attention_mask = int64Row(new Array(cache + step.length).fill(1));
    if (session.inputNames.includes('position_ids')) feeds.position_ids = int64Row(step.map((_, i) => cache + i));
    const t0 = process.hrtime.bigint();
    const results = await session.run(feeds);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (tokens.length === 0) promptMs = ms; else stepMs.push(ms);
    const logits = results[o.logitsOutput];
    const vocab = Number(logits.dims[2]), last = (step.length - 1) * vocab;
    let best = 0;
    for (let v = 1; v < vocab; ++v) if (logits.data[last + v] > logits.data[last + best]) best = v;
    tokens.push(best);
    for (const [input, output] of pasts) feeds[input] = results[output];
    cache += step.length;
    step = [best];
  }
  const sorted = stepMs.slice().sort((a, b) => a - b);
  const total = stepMs.reduce((a, b) => a + b, 0);
  const stats = sorted.length ? { mean: total / sorted.length, p50: percentile(sorted, 50), p90: percentile(sorted, 90),
    p99: percentile(sorted, 99) } : { mean: 0, p50: 0, p90: 0, p99: 0 };
  console.log(JSON.stringify({ runtime: 'onnxruntime', model: o.model, prompt: o.prompt, tokens, prompt_ms: promptMs,
    step_ms: stats, tokens_per_s: total > 0 ? stepMs.length * 1000 / total : 0 }));
}

main().catch(e => { console.error(`ort_generate: ${e.message}`); process.exit(1); });
