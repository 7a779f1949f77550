#!/usr/bin/env bash
# Benchmark (not a test): data parallelism's overlap of gradient all-reduces
# with the backward pass. The d=768, 4-layer GPT (seq 128, batch 4 per rank)
# trains at dp=2 on 2 ranks of 1 thread, with each bucket's all-reduce (placed
# in the program by compile, DDP-sized buckets of BUCKET_MB) started as soon as
# its gradients are ready and finished at the end of the backward pass, polled
# between kernels, and with --no-overlap (each finished where it starts),
# alternately; prints both medians, their ratio, and the time a step waits for
# the bucket all-reduces. ZERO=2 compiles with --zero 2: the buckets are
# reduce-scatters of the flat gradients, overlapped the same way.
#   [ZERO=0|1|2] bash bench/dp_overlap.sh [STEPS] [BUCKET_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-8} bucket=${2:-25} zero=${ZERO:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 -o "$work/gpt.onnx" 2>/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 256, 100000))"
build/tools/partita compile "$work/gpt.onnx" --train --dp 2 --zero "$zero" --bucket-mb "$bucket" -o "$work/out" >/dev/null
median_ms() { # step time from loss.csv (the first step, with set-up, left out)
  /usr/bin/python3 -c "
import csv, statistics
rows = list(csv.DictReader(open('$1/loss.csv')))[1:]
print(statistics.median(2 * 4 * 128 / float(r['tokens_per_s']) * 1000 for r in rows))"
}
run() { # $1: label, rest: extra flags
  local label=$1; shift
  build/tools/partita launch -n 2 "$work/out" --steps "$steps" --data "$work/tokens.npy" --batch 4 --seq 128 \
    --lr 1e-4 --threads 1 --profile --output-dir "$work/$label" "$@" > "$work/$label.log"
  # the program's per-op profile: the time spent waiting for the buckets
  echo "$(median_ms "$work/$label") $(awk '/partita.(AllReduce|ReduceScatter) \(wait\)/ {s += $1} END {print s + 0}' "$work/$label.log")"
}
declare -a on off
for round in 1 2; do
  on+=("$(run overlap$round)")
  off+=("$(run serial$round --no-overlap)")
done
/usr/bin/python3 - "${on[@]}" "${off[@]}" <<'PY'
import statistics, sys
vals = [tuple(map(float, s.split())) for s in sys.argv[1:]]
on, off = vals[:len(vals) // 2], vals[len(vals) // 2:]
m_on, m_off = statistics.median(v[0] for v in on), statistics.median(v[0] for v in off)
w_on, w_off = statistics.median(v[1] for v in on), statistics.median(v[1] for v in off)
print(f"dp=2 step, d=768 L=4 T=128 B=4 per rank, 1 thread per rank: overlapped {m_on:.1f} ms "
      f"(waits {w_on:.1f} ms for all-reduces), not overlapped {m_off:.1f} ms (waits {w_off:.1f} ms), "
      f"ratio {m_on / m_off:.2f}")
PY
