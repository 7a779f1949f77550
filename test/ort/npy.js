// Minimal reader for numpy .npy files (format 1.0/2.0, little-endian, C order).
'use strict';
const fs = require('fs');

const DTYPES = {
  '<f4': { type: 'float32', Array: Float32Array },
  '<f8': { type: 'float64', Array: Float64Array },
  '<i8': { type: 'int64', Array: BigInt64Array },
  '<i4': { type: 'int32', Array: Int32Array },
  '|b1': { type: 'bool', Array: Uint8Array },
};

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: Fortran order unsupported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
    .filter((s) => s.length).map(Number);
  const dt = DTYPES[descr];
  if (!dt) throw new Error(`${path}: unsupported dtype ${descr}`);
  const off = start + headerLen;
  const bytes = buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + buf.length);
  return { type: dt.type, dims: shape, data: new dt.Array(bytes) };
}

module.exports = { readNpy };
