#!/usr/bin/env node
// scripts/ort_reference.js - reference outputs and CPU latency from ONNX Runtime.
//
//   node scripts/ort_reference.js model.onnx [--input name=file.npy ...] [--output-dir DIR]
//        [--threads N] [--warmup N] [--runs N] [--batch N] [--sigmas K] [--json FILE]
//
// Reads inputs from .npy files, runs ONNX Runtime (CPU, all graph optimisations;
// default 1 warm-up and 1 timed run), writes each output as DIR/<name>.npy
// (characters outside [A-Za-z0-9_.-] become '_', as in `kiln run`) and prints
// the benchmark as one kiln-bench/1 JSON record (docs/benchmarking.md), the
// schema `kiln bench` writes; --json FILE also appends it there. compile_ms.total
// is the session creation (load + graph optimisation); config.threads null
// means ONNX Runtime's default (one per physical core).
// onnxruntime-node is looked up in $KILN_ORT_DIR (default: <repo>/.deps/ort).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ortDir, loadOrt, readNpy, writeNpy } = require('./ort_common.js');

const ort = loadOrt('ort_reference');

// The definitions of kiln/support/Statistics.h: drop samples further than
// `sigmas` population standard deviations from the mean (once), then
// nearest-rank percentiles over the rest.
function summarize(values, sigmas) {
  const meanOf = v => v.reduce((a, b) => a + b, 0) / v.length;
  const stddevOf = (v, m) => Math.sqrt(v.reduce((a, b) => a + (b - m) * (b - m), 0) / v.length);
  let kept = values.slice();
  const m0 = meanOf(kept), s0 = stddevOf(kept, m0);
  if (sigmas > 0 && s0 > 0) kept = kept.filter(x => Math.abs(x - m0) <= sigmas * s0);
  kept.sort((a, b) => a - b);
  const rank = p => kept[Math.max(1, Math.min(kept.length, Math.ceil(p / 100 * kept.length))) - 1];
  const mean = meanOf(kept);
  return { samples: kept.length, outliers: values.length - kept.length,
    latency: { mean, stddev: stddevOf(kept, mean), min: kept[0], max: kept[kept.length - 1],
      p50: rank(50), p90: rank(90), p99: rank(99) } };
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { inputs: {}, outputDir: '', threads: 0, warmup: 1, runs: 1, batch: 1, sigmas: 3, json: '' };
  let model;
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--input') { const [n, f] = args[++i].split('='); opts.inputs[n] = f; }
    else if (a === '--output-dir') opts.outputDir = args[++i];
    else if (a === '--threads') opts.threads = Number(args[++i]);
    else if (a === '--warmup') opts.warmup = Number(args[++i]);
    else if (a === '--runs') opts.runs = Number(args[++i]);
    else if (a === '--batch') opts.batch = Number(args[++i]);
    else if (a === '--sigmas') opts.sigmas = Number(args[++i]);
    else if (a === '--json') opts.json = args[++i];
    else if (a === '-h' || a === '--help') { console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 16).join('\n')); return; }
    else if (a.startsWith('-')) throw new Error(`unknown option ${a} (see --help)`);
    else model = a;
  }
  if (!model) throw new Error('usage: ort_reference.js model.onnx [--input name=file.npy ...] [--output-dir DIR]');
  if (!(opts.runs >= 1) || !(opts.warmup >= 0)) throw new Error('--runs must be >= 1 and --warmup >= 0');
  const start = process.hrtime.bigint();
  const msSince = t0 => Number(process.hrtime.bigint() - t0) / 1e6;
  const sessionOptions = { graphOptimizationLevel: 'all' };
  if (opts.threads > 0) { sessionOptions.intraOpNumThreads = opts.threads; sessionOptions.interOpNumThreads = 1; }
  const session = await ort.InferenceSession.create(model, sessionOptions);
  const createMs = msSince(start);
  const feeds = {};
  const shapes = {};
  for (const name of session.inputNames) {
    if (!opts.inputs[name]) throw new Error(`input '${name}' has no --input file`);
    feeds[name] = readNpy(opts.inputs[name], ort);
    shapes[name] = feeds[name].dims.map(Number);
  }
  let results;
  for (let i = 0; i < opts.warmup; ++i) results = await session.run(feeds);
  const times = [];
  for (let i = 0; i < opts.runs; ++i) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(msSince(t0));
  }
  if (opts.outputDir) {
    fs.mkdirSync(opts.outputDir, { recursive: true });
    for (const name of session.outputNames)
      writeNpy(path.join(opts.outputDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), results[name]);
  }
  const s = summarize(times, opts.sigmas);
  const record = {
    schema: 'kiln-bench/1', runtime: 'onnxruntime', runtime_version: ortVersion(), backend: 'onnxruntime-cpu',
    model: path.basename(model), model_path: model, date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    machine: { host: os.hostname(), cpu: os.cpus()[0].model, cores: os.cpus().length,
      os: `${os.type()} ${os.release()} ${process.arch === 'x64' ? 'x86_64' : process.arch}`, gpu: null },
    config: { warmup: opts.warmup, runs: opts.runs, threads: opts.threads > 0 ? opts.threads : null, batch: opts.batch,
      sigmas: opts.sigmas, seed: null, options: 'graphOptimizationLevel=all', inputs: shapes },
    launch: null, runs_completed: times.length, samples: s.samples, outliers: s.outliers, latency_ms: s.latency,
    throughput_per_s: opts.batch * 1000 / s.latency.mean,
    compile_ms: { import: null, passes: null, codegen: null, total: createMs },
    memory: { peak_host_bytes: process.resourceUsage().maxRSS * 1024, peak_device_bytes: null },
    gpu: null, versus: null, wall_s: msSince(start) / 1000,
  };
  const line = JSON.stringify(record);
  if (opts.json) fs.appendFileSync(opts.json, line + '\n');
  console.log(line);
}

function ortVersion() {
  try { return require(path.join(ortDir, 'node_modules', 'onnxruntime-node', 'package.json')).version; }
  catch (e) { return 'unknown'; }
}

main().catch(e => { console.error(`ort_reference: ${e.message}`); process.exit(1); });
