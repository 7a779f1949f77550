#!/usr/bin/env bash
# Benchmark (not a test): what each ZeRO stage saves and costs on one model, measured in
# one run. The d=768, 4-layer GPT (vocabulary 8192, seq 128, batch 4 per rank) trains
# STEPS steps at dp=2 (2 ranks of 1 thread) at --zero 0, 1, 2 and 3; per stage it prints
# the largest rank's peak RSS (GNU time over the launch: the largest process), what
# `partita inspect` predicts for a rank (weights, activations and the training state), the
# median step time, and both as ratios to --zero 0's.
#   bash bench/zero_memory.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 --vocab 8192 \
  -o "$work/gpt.onnx" 2>/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 8192, 100000))"
for z in 0 1 2 3; do
  build/tools/partita compile "$work/gpt.onnx" --train --dp 2 --zero "$z" -o "$work/z$z" >/dev/null
  build/tools/partita inspect "$work/z$z" >"$work/inspect$z.txt"
  /usr/bin/time -f "%M" -o "$work/rss$z.txt" build/tools/partita launch -n 2 "$work/z$z" --steps "$steps" \
    --data "$work/tokens.npy" --batch 4 --seq 128 --lr 1e-4 --threads 1 --output-dir "$work/r$z" >/dev/null
done
/usr/bin/python3 - "$work" <<'PY'
import csv, re, statistics, sys
work = sys.argv[1]
rows = []
for z in range(4):
    rss = int(open(f"{work}/rss{z}.txt").read().split()[-1]) / 1024
    t = open(f"{work}/inspect{z}.txt").read()
    w, a = map(float, re.search(r"\n0 +([0-9.]+) +([0-9.]+) +[0-9]+ +[0-9.]+\n", t).groups())
    p, g, m = map(float, re.search(r"parameters ([0-9.]+) MB, gradients ([0-9.]+) MB, AdamW moments ([0-9.]+) MB", t).groups())
    steps = list(csv.DictReader(open(f"{work}/r{z}/loss.csv")))[1:]
    ms = statistics.median(2 * 4 * 128 / float(r["tokens_per_s"]) * 1000 for r in steps)
    rows.append((z, rss, w, a, p, g, m, ms))
base = rows[0]
print("d=768 L=4 vocab 8192, T=128 B=4 per rank, dp=2, 1 thread per rank (rank 0's prediction by partita inspect)")
print(f"{'zero':>4} {'peak RSS MB':>12} {'x zero 0':>9} {'weights':>8} {'activ.':>8} {'params':>8} {'grads':>8} "
      f"{'moments':>8} {'step ms':>8} {'x zero 0':>9}")
for z, rss, w, a, p, g, m, ms in rows:
    print(f"{z:>4} {rss:>12.0f} {rss / base[1]:>9.2f} {w:>8.1f} {a:>8.1f} {p:>8.1f} {g:>8.1f} {m:>8.1f} "
          f"{ms:>8.1f} {ms / base[7]:>9.2f}")
PY
