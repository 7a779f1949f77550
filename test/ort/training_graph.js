// The exported training graph (loss + gradients of every parameter) run by
// ONNX Runtime against `partita run` on the same graph: checks that the
// backward ops Partita emits, and the ONNX function bodies it exports for
// its own ops (partita.Linear, Gelu, FastGelu, EmbeddingGrad as a ScatterND
// add), mean in ONNX what Partita's runtime computes.
// Usage: node training_graph.js PARTITA_OPT PARTITA FIXTURES_DIR WORK_DIR
'use strict';
const ort = require('onnxruntime-node');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { readNpy } = require('./npy');

const [partitaOpt, partita, fixtures, work] = process.argv.slice(2);
const RTOL = 1e-4; // gradients sum in different orders
// Absolute floor: the key biases' gradients are zero in exact arithmetic
// (softmax ignores a per-row constant), so both sides hold ~1e-10 noise.
const ATOL = 1e-8;
const MODELS = ['gpt_fused_tied_op17_static', 'gpt_separate_untied_op14_static', 'llama_op17_static',
                'encoder_op14_static'];

/// max |a - b| over max |b|, with |a - b| below ATOL counted as 0.
function relError(actual, expected) {
  if (actual.length !== expected.length) return Infinity;
  let scale = 0, err = 0;
  for (let i = 0; i < expected.length; i++) scale = Math.max(scale, Math.abs(expected[i]));
  for (let i = 0; i < expected.length; i++) err = Math.max(err, Math.abs(actual[i] - expected[i]));
  return err <= ATOL ? 0 : err / Math.max(scale, 1e-30);
}

function writeNpyInt64(file, dims, values) {
  const header = `{'descr': '<i8', 'fortran_order': False, 'shape': (${dims.join(', ')}${dims.length === 1 ? ',' : ''}), }`;
  const padded = header + ' '.repeat(63 - ((header.length + 10) % 64)) + '\n';
  const pre = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, padded.length & 255, padded.length >> 8]);
  const body = Buffer.from(new BigInt64Array(values.map(BigInt)).buffer);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(padded, 'latin1'), body]));
}

async function main() {
  fs.rmSync(work, { recursive: true, force: true }); // this test's own folder
  fs.mkdirSync(work, { recursive: true });
  let failed = 0, checked = 0;
  for (const name of MODELS) {
    const ids = readNpy(path.join(fixtures, `${name}.b2.in.ids.npy`));
    const train = path.join(work, `${name}.train.onnx`);
    execFileSync(partitaOpt, [path.join(fixtures, `${name}.onnx`), '--passes=canonicalize,add-loss,autodiff',
                              `--emit-onnx=${train}`], { stdio: ['ignore', 'ignore', 'inherit'] });
    // Labels: the ids shifted by one (next-token), the last one ignored.
    const n = ids.data.length, labels = [];
    for (let i = 0; i < n; i++) labels.push(i + 1 < n ? Number(ids.data[i + 1]) : -100);
    const labelsFile = path.join(work, `${name}.labels.npy`);
    writeNpyInt64(labelsFile, ids.dims, labels);
    const idsFile = path.join(fixtures, `${name}.b2.in.ids.npy`), outDir = path.join(work, `${name}.ours`);
    execFileSync(partita, ['run', train, `--input=ids=${idsFile}`, `--input=labels=${labelsFile}`,
                           `--output-dir=${outDir}`], { stdio: ['ignore', 'ignore', 'inherit'] });
    const session = await ort.InferenceSession.create(train);
    const feeds = { ids: new ort.Tensor('int64', ids.data, ids.dims),
                    labels: new ort.Tensor('int64', BigInt64Array.from(labels.map(BigInt)), ids.dims) };
    const theirs = await session.run(feeds);
    for (const out of session.outputNames) {
      const err = relError(readNpy(path.join(outDir, `${out}.npy`)).data, theirs[out].data);
      checked++;
      if (!(err <= RTOL)) {
        failed++;
        console.log(`FAIL ${name} ${out}: max relative error ${err.toExponential(2)}`);
      }
    }
    console.log(`${name}: ${session.outputNames.length} outputs (loss and gradients) checked`);
  }
  console.log(`${checked - failed} of ${checked} outputs agree within ${RTOL}`);
  process.exit(failed ? 1 : 0);
}
main().catch((e) => { console.error(e); process.exit(1); });
