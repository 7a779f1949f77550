// Times ONNX Runtime (CPU provider, all graph optimizations) on one model.
// Usage: node ort_time.js MODEL.onnx INPUT_NAME=FILE.npy THREADS REPEAT -> prints median ms
'use strict';
const path = require('path');
const ort = require(path.join(__dirname, '..', 'test', 'ort', 'node_modules', 'onnxruntime-node'));
const { readNpy } = require(path.join(__dirname, '..', 'test', 'ort', 'npy'));

async function main() {
  const [model, input, threads, repeat] = process.argv.slice(2);
  const [name, file] = input.split('=');
  const t = readNpy(file);
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    executionMode: 'sequential' });
  const feeds = { [name]: new ort.Tensor(t.type, t.data, t.dims) };
  await session.run(feeds); // warm-up
  const times = [];
  for (let i = 0; i < Number(repeat); i++) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(times[Math.floor(times.length / 2)].toFixed(3));
}
main().catch((e) => { console.error(e); process.exit(1); });
