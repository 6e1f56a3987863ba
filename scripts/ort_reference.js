#!/usr/bin/env node
// scripts/ort_reference.js - reference outputs and CPU latency from ONNX Runtime.
//
//   node scripts/ort_reference.js model.onnx [--input name=file.npy ...] [--output-dir DIR]
//        [--threads N] [--warmup N] [--runs N]
//
// Reads inputs from .npy files, runs ONNX Runtime (CPU, all graph optimisations),
// writes each output as DIR/<name>.npy (characters outside [A-Za-z0-9_.-]
// become '_', as in `kiln run`) and prints a JSON line with latency statistics.
// onnxruntime-node is looked up in $KILN_ORT_DIR (default: <repo>/.deps/ort).
'use strict';
const fs = require('fs');
const path = require('path');

const ortDir = process.env.KILN_ORT_DIR || path.join(__dirname, '..', '.deps', 'ort');
let ort;
try {
  ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
} catch (e) {
  console.error(`ort_reference: onnxruntime-node not found in ${ortDir} (run scripts/setup.sh): ${e.message}`);
  process.exit(3);
}

const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array], '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array], '<u4': ['uint32', Uint32Array],
  '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order is not supported`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [type, Ctor] = NPY_TYPES[descr] || [];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr}`);
  const bytes = buf.subarray(start + headerLen);
  const data = new Ctor(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return new ort.Tensor(type, type === 'bool' ? Uint8Array.from(data) : data, dims);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(NPY_TYPES).find(k => NPY_TYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`cannot write ${tensor.type} as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.type === 'bool' ? Uint8Array.from(tensor.data, b => (b ? 1 : 0)) : tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { inputs: {}, outputDir: '', threads: 0, warmup: 1, runs: 1 };
  let model;
  for (let i = 0; i < args.length; ++i) {
    const a = args[i];
    if (a === '--input') { const [n, f] = args[++i].split('='); opts.inputs[n] = f; }
    else if (a === '--output-dir') opts.outputDir = args[++i];
    else if (a === '--threads') opts.threads = Number(args[++i]);
    else if (a === '--warmup') opts.warmup = Number(args[++i]);
    else if (a === '--runs') opts.runs = Number(args[++i]);
    else if (a === '-h' || a === '--help') { console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 12).join('\n')); return; }
    else model = a;
  }
  if (!model) throw new Error('usage: ort_reference.js model.onnx [--input name=file.npy ...] [--output-dir DIR]');
  const sessionOptions = { graphOptimizationLevel: 'all' };
  if (opts.threads > 0) { sessionOptions.intraOpNumThreads = opts.threads; sessionOptions.interOpNumThreads = 1; }
  const session = await ort.InferenceSession.create(model, sessionOptions);
  const feeds = {};
  for (const name of session.inputNames) {
    if (!opts.inputs[name]) throw new Error(`input '${name}' has no --input file`);
    feeds[name] = readNpy(opts.inputs[name]);
  }
  let results;
  for (let i = 0; i < opts.warmup; ++i) results = await session.run(feeds);
  const times = [];
  for (let i = 0; i < opts.runs; ++i) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  if (opts.outputDir) {
    fs.mkdirSync(opts.outputDir, { recursive: true });
    for (const name of session.outputNames)
      writeNpy(path.join(opts.outputDir, name.replace(/[^A-Za-z0-9_.-]/g, '_') + '.npy'), results[name]);
  }
  times.sort((a, b) => a - b);
  const q = p => times[Math.min(times.length - 1, Math.floor(p * times.length))];
  console.log(JSON.stringify({ runtime: 'onnxruntime-node', version: ort.env.versions ? ort.env.versions.common : '1.30.0',
    runs: times.length, mean_ms: times.reduce((a, b) => a + b, 0) / times.length, p50_ms: q(0.5), p90_ms: q(0.9), p99_ms: q(0.99) }));
}

main().catch(e => { console.error(`ort_reference: ${e.message}`); process.exit(1); });
