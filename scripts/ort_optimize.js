#!/usr/bin/env node
// scripts/ort_optimize.js - writes the model ONNX Runtime optimises a model into.
//
//   node scripts/ort_optimize.js model.onnx out.onnx [--level basic|extended|all]
//
// ONNX Runtime's graph optimiser (default level 'extended', the level whose
// fusions write com.microsoft ops: FusedConv, FusedMatMul, Gelu,
// SkipLayerNormalization, ...) runs on the model and the result is saved:
// the form of the models that Olive, optimum and ONNX Runtime's own tools
// hand to users.
'use strict';
const fs = require('fs');
const path = require('path');
const { loadOrt } = require('./ort_common.js');

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('-h') || args.includes('--help') || args.length < 2) {
    console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 11).join('\n'));
    process.exit(args.length < 2 && !args.includes('-h') && !args.includes('--help') ? 2 : 0);
  }
  const level = args.includes('--level') ? args[args.indexOf('--level') + 1] : 'extended';
  if (!['basic', 'extended', 'all'].includes(level)) throw new Error(`--level must be basic, extended or all, got '${level}'`);
  const ort = loadOrt('ort_optimize');
  fs.mkdirSync(path.dirname(path.resolve(args[1])), { recursive: true });
  await ort.InferenceSession.create(args[0], { graphOptimizationLevel: level, optimizedModelFilePath: args[1], logSeverityLevel: 3 });
  if (!fs.existsSync(args[1])) throw new Error(`ONNX Runtime wrote no model to ${args[1]}`);
}

main().catch(e => { console.error(`ort_optimize: ${e.message}`); process.exit(1); });
