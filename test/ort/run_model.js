// Runs an ONNX model in ONNX Runtime on .npy inputs and prints its first
// output as JSON ({dims, data}) — for Python tests that want ORT's answer.
// Usage: node run_model.js MODEL.onnx NAME=FILE.npy...
'use strict';
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

(async () => {
  const [model, ...specs] = process.argv.slice(2);
  const feeds = {};
  for (const spec of specs) {
    const [name, file] = spec.split('=');
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const session = await ort.InferenceSession.create(model);
  const out = (await session.run(feeds))[session.outputNames[0]];
  process.stdout.write(JSON.stringify({ dims: out.dims, data: Array.from(out.data, Number) }));
})().catch((e) => { console.error(e); process.exit(1); });
