// scripts/ort_common.js - what the scripts that drive onnxruntime-node share:
// loading it from $KILN_ORT_DIR (default <repo>/.deps/ort, installed by
// scripts/setup.sh), and reading and writing .npy files as its tensors
// (little-endian, C order; float16 data travels as its 16-bit patterns;
// string tensors as numpy's fixed-width unicode arrays, '<U<n>').
'use strict';
const fs = require('fs');
const path = require('path');

const ortDir = process.env.KILN_ORT_DIR || path.join(__dirname, '..', '.deps', 'ort');

/// onnxruntime-node, or exit 3 with a message naming `caller` when it is missing.
function loadOrt(caller) {
  try {
    return require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
  } catch (e) {
    console.error(`${caller}: onnxruntime-node not found in ${ortDir} (run scripts/setup.sh): ${e.message}`);
    process.exit(3);
  }
}

const NPY_TYPES = {
  '<f2': ['float16', Uint16Array],
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '<i2': ['int16', Int16Array], '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array], '<u4': ['uint32', Uint32Array],
  '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
};

function readNpy(file, ort) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order is not supported`);
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const bytes = buf.subarray(start + headerLen);
  const width = /^<U(\d+)$/.exec(descr);
  if (width) return new ort.Tensor('string', readUnicode(bytes, Number(width[1])), dims);
  const [type, Ctor] = NPY_TYPES[descr] || [];
  if (!type) throw new Error(`${file}: unsupported dtype ${descr}`);
  const data = new Ctor(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return new ort.Tensor(type, type === 'bool' ? Uint8Array.from(data) : data, dims);
}

/// Elements of `width` UTF-32LE code points each, NUL-padded at the end.
function readUnicode(bytes, width) {
  const out = [];
  for (let at = 0; at + 4 * width <= bytes.length; at += 4 * width) {
    let s = '';
    for (let k = 0; k < width; ++k) {
      const cp = bytes.readUInt32LE(at + 4 * k);
      if (cp === 0) break;
      s += String.fromCodePoint(cp);
    }
    out.push(s);
  }
  return out;
}

function writeUnicode(strings) {
  const points = strings.map(s => Array.from(s, c => c.codePointAt(0)));
  const width = Math.max(1, ...points.map(p => p.length));
  const data = Buffer.alloc(4 * width * strings.length);
  points.forEach((p, i) => p.forEach((cp, k) => data.writeUInt32LE(cp, 4 * (i * width + k))));
  return [`<U${width}`, data];
}

function writeNpy(file, tensor) {
  let descr = Object.keys(NPY_TYPES).find(k => NPY_TYPES[k][0] === tensor.type);
  let unicode = null;
  if (tensor.type === 'string') [descr, unicode] = writeUnicode(Array.from(tensor.data));
  if (!descr) throw new Error(`cannot write ${tensor.type} as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = unicode || (tensor.type === 'bool' ? Uint8Array.from(tensor.data, b => (b ? 1 : 0)) : tensor.data);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

module.exports = { ortDir, loadOrt, readNpy, writeNpy, NPY_TYPES };
