// Differential test of the ONNX importer, exporter and canonicalizer against
// ONNX Runtime and the PyTorch reference outputs committed with each fixture:
//   1. ORT(original model)            vs torch reference
//   2. ORT(partita import → export)   vs torch reference
//   3. ORT(partita canonicalize → export) vs torch reference and vs (1)
//   4. partita run (Partita's own CPU runtime) vs torch reference and vs (1)
// Usage: node differential.js PARTITA_OPT PARTITA FIXTURES_DIR WORK_DIR
'use strict';
const ort = require('onnxruntime-node');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { readNpy } = require('./npy');

const [partitaOpt, partita, fixtures, work] = process.argv.slice(2);
const RTOL = 1e-5;

// Largest |a-b| relative to the reference's scale (max |ref|), so values near
// zero do not make the bound meaningless.
function relError(actual, expected) {
  let scale = 0, err = 0;
  for (let i = 0; i < expected.length; i++) scale = Math.max(scale, Math.abs(expected[i]));
  for (let i = 0; i < expected.length; i++) err = Math.max(err, Math.abs(actual[i] - expected[i]));
  if (actual.length !== expected.length) return Infinity;
  return err / Math.max(scale, 1e-30);
}

async function runOrt(modelPath, feeds) {
  const session = await ort.InferenceSession.create(modelPath, { graphOptimizationLevel: 'all' });
  return session.run(feeds);
}

async function main() {
  fs.rmSync(work, { recursive: true, force: true }); // this test's own folder
  fs.mkdirSync(work, { recursive: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(fixtures, 'manifest.json')));
  let passed = 0, failed = 0;
  const check = (label, err) => {
    const ok = err <= RTOL;
    console.log(`${ok ? 'PASS' : 'FAIL'} ${label}: max relative error ${err.toExponential(2)}`);
    ok ? passed++ : failed++;
  };
  for (const entry of manifest) {
    const model = path.join(fixtures, entry.model);
    for (const run of entry.runs) {
      const feeds = {};
      const shapeFlags = [];
      for (const [name, file] of Object.entries(run.inputs)) {
        const t = readNpy(path.join(fixtures, file));
        feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
        shapeFlags.push(`--input-shape=${name}=${t.dims.join('x')}`);
      }
      const ref = readNpy(path.join(fixtures, run.outputs.out)).data;
      const label = `${entry.name}.${run.tag}`;
      const original = (await runOrt(model, feeds)).out.data;
      check(`${label} ORT(original) vs torch`, relError(original, ref));
      for (const [stage, passes] of [['roundtrip', ''], ['canonical', 'canonicalize']]) {
        const out = path.join(work, `${label}.${stage}.onnx`);
        execFileSync(partitaOpt, [model, ...shapeFlags, `--passes=${passes}`, `--emit-onnx=${out}`],
          { stdio: ['ignore', 'ignore', 'inherit'] });
        const got = (await runOrt(out, feeds)).out.data;
        check(`${label} ORT(${stage}) vs torch`, relError(got, ref));
        check(`${label} ORT(${stage}) vs ORT(original)`, relError(got, original));
      }
      const outDir = path.join(work, `${label}.run`);
      const inputFlags = Object.entries(run.inputs).map(([n, f]) => `--input=${n}=${path.join(fixtures, f)}`);
      execFileSync(partita, ['run', model, ...inputFlags, `--output-dir=${outDir}`],
        { stdio: ['ignore', 'ignore', 'inherit'] });
      const ours = readNpy(path.join(outDir, 'out.npy')).data;
      check(`${label} partita run vs torch`, relError(ours, ref));
      check(`${label} partita run vs ORT(original)`, relError(ours, original));
    }
  }
  console.log(`differential: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(1); });
