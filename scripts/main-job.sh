#!/usr/bin/env bash
# The main job on the bundled default model (the tiny GPT fixture): install,
# build, compile it for 2 tensor-parallel ranks, show the plan, run the ranks,
# and check the result against the single-rank run and PyTorch's reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
fx=models/fixtures/gpt_fused_tied_op17_static
out=build/main-job
rm -rf "$out"
./build/tools/partita compile "$fx.onnx" --tp 2 -o "$out/compiled"
./build/tools/partita inspect "$out/compiled" | sed -n '/^rank /,$p'
./build/tools/partita launch -n 2 "$out/compiled" --input "ids=$fx.b2.in.ids.npy" --output-dir "$out/tp2"
./build/tools/partita run "$fx.onnx" --input "ids=$fx.b2.in.ids.npy" --output-dir "$out/single"
/usr/bin/python3 - "$out/tp2/out.npy" "$out/single/out.npy" "$fx.b2.ref.out.npy" <<'PY'
import sys
import numpy as np
tp, single, ref = (np.load(p) for p in sys.argv[1:])
rel = lambda a, b: np.abs(a - b).max() / np.abs(b).max()
print(f"logits {tp.shape}: tp=2 vs single rank {rel(tp, single):.2e}, vs PyTorch {rel(tp, ref):.2e} "
      "(max error relative to the output's scale)")
PY
