#!/usr/bin/env bash
# Benchmarks (not tests) for tensor parallelism, each against a peer measured
# in the same run:
#  1. the communicator microbenchmark (Partita's collectives vs raw MPI, 2 ranks,
#     4 KB .. 256 MB, nccl-tests algbw/busbw), target ratio >= 0.95, each size's busbw
#     as a fraction of the machine's copy bandwidth measured in the same run, and per
#     collective the slowest size from 1 MB against the fastest;
#  2. forward time of a GPT with d=1024, 16 heads, 4 layers, seq 256, batch 4 at
#     tp=2 (one thread per rank) against tp=1 (one thread): the speed-up
#     (target >= 1.8 on a 2-core machine).
#   bash bench/tensor_parallel.sh [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 --mca btl_vader_single_copy_mechanism none \
  build/bench/partita-commbench --max-bytes 268435456
/usr/bin/python3 models/export_gpt.py --d 1024 --heads 16 --layers 4 --seq 256 --batch 4 -o "$work/gpt1024.onnx" 2>/dev/null
declare -A ms
for tp in 1 2; do
  build/tools/partita compile "$work/gpt1024.onnx" --tp "$tp" -o "$work/tp$tp" >/dev/null
  line=$(build/tools/partita launch -n "$tp" "$work/tp$tp" --input "ids=$work/gpt1024.ids.npy" \
         --output-dir "$work/res$tp" --threads 1 --repeat "$repeat" | grep "rank 0:")
  ms[$tp]=$(sed -E 's/.*median ([0-9.]+) ms.*/\1/' <<<"$line")
  echo "tp=$tp: median ${ms[$tp]} ms (one thread per rank)"
done
echo "tp=2 speed-up over tp=1: $(awk "BEGIN{printf \"%.2f\", ${ms[1]}/${ms[2]}}")"
