#!/usr/bin/env bash
# End to end tensor parallelism: compile a fixture at --tp T, launch T ranks
# under mpirun (oversubscribed), and compare the output with the
# single-rank `partita run` of the same model (and with PyTorch's reference),
# within 1e-5 of the output's scale. With `--pp P` among the extra flags the
# plan has T x P ranks: a pipeline, whose last stage writes the output.
# With `--micro-batches K` (not passed to compile) the launch gets inputs of
# K batches: the fixture's, then K-1 others (each input rolled by j along its
# last axis); slice j of the output must equal the single-rank run of batch j,
# and slice 0 PyTorch's.
#   tensor_parallel.sh PARTITA FIXTURES_DIR WORK_DIR FIXTURE TP [--micro-batches K] [extra compile flags]
set -euo pipefail
partita=$1 fixtures=$2 work=$3 name=$4 tp=$5
shift 5
micro=1
if [ "${1:-}" = --micro-batches ]; then micro=$2; shift 2; fi
pp=1
for ((i = 1; i < $#; ++i)); do
  if [ "${!i}" = --pp ]; then j=$((i + 1)); pp=${!j}; fi
done
ranks=$((tp * pp))
mkdir -p "$work"
out="$work/$name.tp$tp.pp$pp.mb$micro"
rm -rf "$out" "$out".single* "$out.res" "$out.in"
mkdir -p "$out.in"
inputs=() shapes=() batch_inputs=()
for f in "$fixtures/$name".b2.in.*.npy; do
  input=${f##*.in.}; input=${input%.npy}
  shapes+=(--input-shape "$input=$(/usr/bin/python3 -c "import numpy as np; print('x'.join(map(str, np.load('$f').shape)))")")
  # Batch j of the input: the fixture's rolled by j along the last axis; all K stacked.
  /usr/bin/python3 -c "
import numpy as np
x = np.load('$f')
parts = [np.roll(x, j, axis=-1) for j in range($micro)]
for j, p in enumerate(parts):
    np.save('$out.in/$input.%d.npy' % j, p)
np.save('$out.in/$input.npy', np.concatenate(parts, axis=0))"
  inputs+=(--input "$input=$out.in/$input.npy")
done
"$partita" compile "$fixtures/$name.onnx" --tp "$tp" "${shapes[@]}" "$@" -o "$out" >/dev/null
# Every emitted rank program is valid ONNX.
/usr/bin/python3 -c "
import glob, onnx, sys
files = sorted(glob.glob('$out/rank*/forward.onnx'))
assert len(files) == $ranks, files
for f in files:
    onnx.checker.check_model(onnx.load(f), full_check=True)
"
# PARTITA_TEST_DEVICE (set per test by test/CMakeLists.txt): the device the ranks run on.
"$partita" launch -n "$ranks" "$out" "${inputs[@]}" --output-dir "$out.res" --threads 1 --device "${PARTITA_TEST_DEVICE:-cpu}"
for ((j = 0; j < micro; ++j)); do
  single=()
  for f in "$fixtures/$name".b2.in.*.npy; do
    input=${f##*.in.}; input=${input%.npy}
    single+=(--input "$input=$out.in/$input.$j.npy")
  done
  "$partita" run "$fixtures/$name.onnx" "${single[@]}" --output-dir "$out.single$j" --threads 1
done
/usr/bin/python3 - "$out" "$micro" "$fixtures/$name.b2.ref.out.npy" <<'PY'
import sys
import numpy as np
out, micro, ref = sys.argv[1], int(sys.argv[2]), np.load(sys.argv[3])
tp = np.load(out + ".res/out.npy")
parts = np.split(tp, micro, axis=0)
for j, part in enumerate(parts):
    single = np.load(f"{out}.single{j}/out.npy")
    assert part.shape == single.shape == ref.shape, (part.shape, single.shape, ref.shape)
    for label, other in [("single-rank", single)] + ([("torch", ref)] if j == 0 else []):
        err = np.abs(part - other).max() / np.abs(other).max()
        print(f"batch {j}: tp vs {label}: max relative error {err:.2e}")
        assert err <= 1e-5, f"batch {j}: tp output differs from {label}: {err}"
# The batches differ, so an order mixed up between micro-batches shows.
assert micro == 1 or np.abs(parts[1] - parts[0]).max() > 1e-3 * np.abs(parts[0]).max(), "the batches' outputs are equal"
PY
