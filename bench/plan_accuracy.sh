#!/usr/bin/env bash
# Benchmark (not a test): how close `partita plan`'s predictions come.
#  1. This machine, measured: for each of 22 layouts, `plan --calibrate` describes it (2 ranks of 1
#     thread) right before the layout is predicted and measured (its speed drifts within minutes); the 22 layouts
#     of the benches' GPT (d=768, 4 layers, vocabulary 8192, 128 tokens, micro-batch 4) on 1-2 ranks
#     (tp, pp with 1F1B/GPipe/interleaved, dp with ZeRO 0-3, micro-batches, recompute, fp32/bf16) the
#     predicted step time and peak memory against `launch --memory`'s measurement and the median step
#     time (goals: time within 20%, memory within 5%); then the planner's own first choice under a
#     700 MB cap, measured, against the fastest measured layout (goal: within 10%; never over the cap).
#  2. Published runs (A100 description): Megatron-LM's GPT-3 175B on 1,024 GPUs and 1T on 3,072 at
#     their layouts, predicted TFLOP/s per GPU against the paper's 140 and 163 (goal within 15%), and
#     the planner's own best for each (goal: predicted at least as fast).
#   bash bench/plan_accuracy.sh [measured|published]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(measured published)
for part in "${parts[@]}"; do
  if [ "$part" = measured ]; then
    /usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 --vocab 8192 \
      -o "$work/gpt.onnx" 2>/dev/null
    /usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 8192, 100000))"
  fi
  /usr/bin/python3 bench/plan_accuracy.py "$part" "$work"
done
