#!/usr/bin/env node
// bench/ort_session_time.js - how long ONNX Runtime's graph optimiser takes.
//
//   node bench/ort_session_time.js model.onnx [--repeats N]
//
// Creates a CPU InferenceSession N times (default 5) with graph optimisation
// 'all' and N times with 'disabled', interleaved, and prints one JSON line: the median
// session-creation milliseconds of each and their difference, which is the
// time ONNX Runtime spends optimising the graph (the peer of kiln's -O3
// pipeline in bench/pass_timing.py). onnxruntime-node comes from
// $KILN_ORT_DIR (default <repo>/.deps/ort), as in scripts/ort_reference.js.
'use strict';
const path = require('path');
const { loadOrt } = require('../scripts/ort_common.js');

const ort = loadOrt('ort_session_time');

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
  const args = process.argv.slice(2);
  if (!args.length || args[0] === '--help') {
    console.log('usage: node bench/ort_session_time.js model.onnx [--repeats N]');
    process.exit(args.length ? 0 : 2);
  }
  const model = args[0];
  const at = args.indexOf('--repeats');
  const repeats = at >= 0 ? parseInt(args[at + 1], 10) : 5;
  if (!(repeats > 0)) {
    console.error('ort_session_time: --repeats must be a positive integer');
    process.exit(2);
  }
  const result = { model: path.basename(model), repeats, onnxruntime: ort.env.versions ? ort.env.versions.common : null };
  // Interleaved, so drift (page cache, other load) hits both levels alike.
  const times = { all: [], disabled: [] };
  for (let i = 0; i < repeats; ++i) {
    for (const level of ['all', 'disabled']) {
      const t0 = process.hrtime.bigint();
      const session = await ort.InferenceSession.create(model, { graphOptimizationLevel: level, intraOpNumThreads: 1 });
      times[level].push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (session.release) await session.release();
    }
  }
  for (const level of ['all', 'disabled']) result[`session_ms_${level}`] = median(times[level]);
  result.optimise_ms = result.session_ms_all - result.session_ms_disabled;
  console.log(JSON.stringify(result));
}

main().catch((e) => {
  console.error(`ort_session_time: ${e.message}`);
  process.exit(1);
});
