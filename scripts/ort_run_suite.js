#!/usr/bin/env node
// scripts/ort_run_suite.js - ONNX Runtime's outputs for a directory of cases.
//
//   node scripts/ort_run_suite.js SUITE
//
// Each SUITE/<case>/ holds model.onnx and inputs/input_<i>.npy, one per model
// input in order. Writes outputs/output_<k>.npy in the model's output order,
// or ort_error.txt with ONNX Runtime's message when it refuses the case (the
// case then has no oracle). Runs with basic graph optimisations only, so that
// each op runs as its own kernel. onnxruntime-node is looked up in
// $KILN_ORT_DIR (default: <repo>/.deps/ort).
'use strict';
const fs = require('fs');
const path = require('path');
const { loadOrt, readNpy, writeNpy } = require('./ort_common.js');

const ort = loadOrt('ort_run_suite');

async function runCase(dir) {
  fs.rmSync(path.join(dir, 'ort_error.txt'), { force: true });
  try {
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), { graphOptimizationLevel: 'basic', logSeverityLevel: 4 });
    const feeds = {};
    session.inputNames.forEach((name, i) => { feeds[name] = readNpy(path.join(dir, 'inputs', `input_${i}.npy`), ort); });
    const results = await session.run(feeds);
    fs.mkdirSync(path.join(dir, 'outputs'), { recursive: true });
    session.outputNames.forEach((name, k) => writeNpy(path.join(dir, 'outputs', `output_${k}.npy`), results[name]));
    return true;
  } catch (e) {
    fs.writeFileSync(path.join(dir, 'ort_error.txt'), String(e.message) + '\n');
    return false;
  }
}

async function main() {
  const suite = process.argv[2];
  if (!suite || suite === '-h' || suite === '--help') {
    console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 12).join('\n'));
    process.exit(suite ? 0 : 2);
  }
  let ok = 0, refused = 0;
  for (const name of fs.readdirSync(suite).sort()) {
    const dir = path.join(suite, name);
    if (!fs.existsSync(path.join(dir, 'model.onnx'))) continue;
    if (await runCase(dir)) ++ok; else ++refused;
  }
  console.log(`ort_run_suite: ${ok} cases run, ${refused} refused by ONNX Runtime`);
}

main().catch(e => { console.error(`ort_run_suite: ${e.message}`); process.exit(1); });
