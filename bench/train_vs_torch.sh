#!/usr/bin/env bash
# Benchmark (not a test): one training step (forward + backward + AdamW) of the
# d=768, 12-head, 4-layer GPT (seq 128, batch 4, byte vocabulary) on one rank,
# Partita against PyTorch eager on the CPU with the same thread count, in the
# same run (torch with bench/torch_env.sh's OpenBLAS settings).
# Also prints how long Partita's matmuls alone take (from launch --profile):
# f32 GEMM at the core's FMA peak is most of the step, a floor for the ratio.
#   bash bench/train_vs_torch.sh [STEPS] [THREADS...]   (default: 1 and 2 threads)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-6}
shift || true
thread_counts=("$@")
[ $# -eq 0 ] && thread_counts=(1 2)
# Without an optimized BLAS, Debian's torch falls back to the reference BLAS
# (BLAS_INFO=generic, ~4 GFLOP/s): give it OpenBLAS, as a user would have.
if ! dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q "install ok installed"; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libopenblas0-pthread >/dev/null
fi
source bench/torch_env.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 -o "$work/gpt.onnx" 2>/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 256, 100000))"
build/tools/partita compile "$work/gpt.onnx" --train -o "$work/out" >/dev/null
for threads in "${thread_counts[@]}"; do
build/tools/partita launch -n 1 "$work/out" --steps "$steps" --data "$work/tokens.npy" --batch 4 --seq 128 \
  --lr 1e-4 --threads "$threads" --output-dir "$work/res" --profile >"$work/profile.txt"
gemm=$(awk '/program by op type/ {p = /forward|backward/} p && / ms  (MatMul|partita.Linear|Gemm) x/ {t += $1} END {print t}' \
  "$work/profile.txt")
ours=$(/usr/bin/python3 -c "
import csv, statistics
rows = list(csv.DictReader(open('$work/res/loss.csv')))[1:]  # the first step includes set-up
print(statistics.median(4 * 128 / float(r['tokens_per_s']) * 1000 for r in rows))")
theirs=$(env "${torch_env[@]}" OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads /usr/bin/python3 - "$steps" "$threads" <<'PY'
import statistics, sys, time
import torch, torch.nn.functional as F
sys.path.insert(0, "models")
import export_models as em
em.VOCAB, em.D, em.HEADS, em.LAYERS, em.SEQ = 256, 768, 12, 4, 128
torch.set_num_threads(int(sys.argv[2]))
model = em.GPT(True, True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, 256, (4, 128)); labels = torch.randint(0, 256, (4, 128))
times = []
for _ in range(int(sys.argv[1])):
    t = time.perf_counter()
    loss = F.cross_entropy(model(ids).reshape(-1, 256), labels.reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
    times.append((time.perf_counter() - t) * 1000)
print(statistics.median(times[1:]))
PY
)
printf "train step, d=768 L=4 T=128 B=4, %s thread(s): partita %.1f ms, torch %.1f ms, ratio %.2f (target <= 0.7);" \
  "$threads" "$ours" "$theirs" "$(awk "BEGIN{print $ours/$theirs}")"
printf " partita's matmuls alone %.1f ms (%.2f of torch's step)\n" "$gemm" "$(awk "BEGIN{print $gemm/$theirs}")"
done
