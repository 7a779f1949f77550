#!/usr/bin/env bash
# End to end tensor parallelism: compile a fixture at --tp T, launch T ranks
# under mpirun (oversubscribed), and compare the output with the
# single-rank `partita run` of the same model (and with PyTorch's reference),
# within 1e-5 of the output's scale. With `--pp P` among the extra flags the
# plan has T x P ranks: a pipeline, whose last stage writes the output.
#   tensor_parallel.sh PARTITA FIXTURES_DIR WORK_DIR FIXTURE TP [extra compile flags]
set -euo pipefail
partita=$1 fixtures=$2 work=$3 name=$4 tp=$5
shift 5
pp=1
for ((i = 1; i < $#; ++i)); do
  if [ "${!i}" = --pp ]; then j=$((i + 1)); pp=${!j}; fi
done
ranks=$((tp * pp))
mkdir -p "$work"
inputs=() shapes=()
for f in "$fixtures/$name".b2.in.*.npy; do
  input=${f##*.in.}; input=${input%.npy}
  inputs+=(--input "$input=$f")
  shapes+=(--input-shape "$input=$(/usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$f').shape)))")")
done
out="$work/$name.tp$tp.pp$pp"
rm -rf "$out" "$out.single" "$out.res"
"$partita" compile "$fixtures/$name.onnx" --tp "$tp" "${shapes[@]}" "$@" -o "$out" >/dev/null
# Every emitted rank program is valid ONNX.
/usr/bin/python3 -c "
import glob, onnx, sys
files = sorted(glob.glob('$out/rank*/forward.onnx'))
assert len(files) == $ranks, files
for f in files:
    onnx.checker.check_model(onnx.load(f), full_check=True)
"
"$partita" launch -n "$ranks" "$out" "${inputs[@]}" --output-dir "$out.res" --threads 1
"$partita" run "$fixtures/$name.onnx" "${inputs[@]}" --output-dir "$out.single" --threads 1
/usr/bin/python3 - "$out.res/out.npy" "$out.single/out.npy" "$fixtures/$name.b2.ref.out.npy" <<'PY'
import sys
import numpy as np
tp, single, ref = (np.load(p) for p in sys.argv[1:4])
assert tp.shape == single.shape == ref.shape, (tp.shape, single.shape, ref.shape)
for label, other in (("single-rank", single), ("torch", ref)):
    err = np.abs(tp - other).max() / np.abs(other).max()
    print(f"tp vs {label}: max relative error {err:.2e}")
    assert err <= 1e-5, f"tp output differs from {label}: {err}"
PY
