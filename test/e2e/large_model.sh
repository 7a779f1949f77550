#!/usr/bin/env bash
# A model whose share per rank is over protobuf's 2 GB limit, end to end: a GPT
# (d=4096, 5 layers, vocab 32000: 1.27B parameters, 5.1 GB of seeded random
# weights in external data) generated here, compiled at --tp 2 (2.5 GB per
# rank) without copying a weight byte, launched on 2 ranks, and compared with
# `partita run` of the original file. Also prints the peak RSS of the largest
# rank and of the single-rank run: a rank holds its shards, not the model.
#   large_model.sh PARTITA SOURCE_DIR WORK_DIR
set -euo pipefail
partita=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work/m"' EXIT # 5.1 GB: never left behind
/usr/bin/python3 "$src/models/make_gpt_shape.py" --layers 5 --d 4096 --heads 32 --vocab 32000 --seq 8 --random 1 \
  -o "$work/m"
/usr/bin/python3 -c "import numpy as np; np.save('$work/ids.npy', (np.arange(8) * 3989 % 32000).reshape(1, 8))"
/usr/bin/time -f "compile: %e s, peak RSS %M KB" "$partita" compile "$work/m/model.onnx" --tp 2 -o "$work/c" >/dev/null
artifacts=$(du -sk "$work/c" | cut -f1)
echo "compiled artifacts: $artifacts KB (the weights stay in the model's file)"
[ "$artifacts" -lt 20000 ] || { echo "FAIL: the compiled plan holds weight bytes"; exit 1; }
/usr/bin/python3 - "$work/c" <<'PY'
import glob, sys
import onnx
for f in sorted(glob.glob(sys.argv[1] + "/rank*/forward.onnx")):
    m = onnx.load(f, load_external_data=False)
    share = sum(int(dict((e.key, e.value) for e in t.external_data).get("length", 0)) if
                not any(e.key == "partita_stored_shape" for e in t.external_data) else
                4 * eval("*".join(map(str, t.dims))) for t in m.graph.initializer)
    print(f"{f.split('/')[-2]}: {share / 2**30:.2f} GiB of weights by reference")
    assert share > 2**31, "the test needs more than 2 GB per rank"
PY
/usr/bin/time -f "launch -n 2: %e s, peak RSS of the largest rank %M KB" \
  "$partita" launch -n 2 "$work/c" --input ids="$work/ids.npy" --threads 1 --output-dir "$work/tp" >/dev/null
/usr/bin/time -f "run (one process, the whole model): %e s, peak RSS %M KB" \
  "$partita" run "$work/m/model.onnx" --input ids="$work/ids.npy" --threads 2 --output-dir "$work/single" >/dev/null
/usr/bin/python3 - "$work/tp/logits.npy" "$work/single/logits.npy" <<'PY'
import sys
import numpy as np
tp, single = (np.load(p) for p in sys.argv[1:3])
assert tp.shape == single.shape == (1, 8, 32000), (tp.shape, single.shape)
err = float(np.abs(tp - single).max() / np.abs(single).max())
print(f"tp 2 vs single-rank run: max relative error {err:.2e}")
sys.exit(0 if err <= 1e-5 else 1)
PY
