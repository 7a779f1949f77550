#!/usr/bin/env bash
# Benchmark (not a test): Partita's CPU runtime against ONNX Runtime on the same
# models, inputs and thread counts, measured in the same run. Prints each median,
# the ratio Partita/ORT (target <= 1.0), Partita's GEMM throughput and its memory
# plan (arena vs the lower bound of simultaneously live bytes).
#   bash bench/runtime_vs_ort.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fx=models/fixtures
/usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 -o "$work/gpt768.onnx" 2>/dev/null
# GEMM FLOPs of the d=768 model: 4 layers x (qkv 3d^2 + proj d^2 + fc 4d^2 + fc2 4d^2) per token,
# attention scores and mix 2*T*d per token per layer, LM head d*V, times 2 per multiply-add.
flops=$(awk 'BEGIN{d=768;L=4;T=128;B=4;V=256; print 2*B*T*(L*(12*d*d + 2*T*d) + d*V)}')
printf "%-22s %7s %12s %12s %8s %10s %12s\n" model threads "partita ms" "ort ms" ratio "GFLOP/s" "arena/bound"
for spec in "tiny-gpt $fx/gpt_fused_tied_op17_static.onnx $fx/gpt_fused_tied_op17_static.b2.in.ids.npy 0" \
            "gpt-d768-L4-T128-B4 $work/gpt768.onnx $work/gpt768.ids.npy $flops"; do
  read -r name model ids fl <<<"$spec"
  for t in 1 2; do
    line=$(./build/tools/partita run "$model" --input "ids=$ids" --output-dir "$work/out" --threads "$t" \
           --repeat "$repeat" --stats)
    ours=$(sed -E 's/.*median ([0-9.]+) ms.*/\1/' <<<"$line")
    ratio_mem=$(sed -E 's/.*ratio ([0-9.]+)\).*/\1/' <<<"$line")
    theirs=$(node bench/ort_time.js "$model" "ids=$ids" "$t" "$repeat")
    gflops=$(awk "BEGIN{ if ($fl > 0) printf \"%.1f\", $fl/($ours*1e6); else print \"-\" }")
    printf "%-22s %7s %12s %12s %8s %10s %12s\n" "$name" "$t" "$ours" "$theirs" \
      "$(awk "BEGIN{printf \"%.2f\", $ours/$theirs}")" "$gflops" "$ratio_mem"
  done
done
