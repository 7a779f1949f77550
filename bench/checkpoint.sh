#!/usr/bin/env bash
# Benchmark (not a test): what checkpoints cost a training run, measured in one run. The
# d=768, 4-layer GPT (vocabulary 8192, seq 128, batch 4 per rank) trains STEPS steps at
# dp=2 ZeRO-1 (2 ranks of 1 thread) three times: without --save, with --save every
# INTERVAL steps written in the background (the default), and with --blocking-save. It
# prints each run's mean and median step time (the steps after the first) and their ratios
# to the run without saves (the mean carries the saves; the median shows the noise between
# runs), the checkpoint's size, and the time a blocking save takes against the
# bytes a plain copy of the same size takes to write to the same disk (dd, fdatasync).
#   bash bench/checkpoint.sh [STEPS] [INTERVAL]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-60}
interval=${2:-20}
work=$(mktemp -d -p "${TMPDIR:-/tmp}")
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 --vocab 8192 \
  -o "$work/gpt.onnx" 2>/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 8192, 100000))"
build/tools/partita compile "$work/gpt.onnx" --train --dp 2 --zero 1 -o "$work/plan" >/dev/null
run() { # tag, extra flags
  local tag=$1; shift
  build/tools/partita launch -n 2 "$work/plan" --steps "$steps" --data "$work/tokens.npy" --batch 4 --seq 128 \
    --lr 1e-4 --threads 1 --output-dir "$work/r-$tag" "$@" >/dev/null
}
run none
run async --save "$work/ck-async" --save-interval "$interval"
run blocking --save "$work/ck-blocking" --save-interval "$interval" --blocking-save
bytes=$(du -sb "$work/ck-async/$(cat "$work/ck-async/latest")" | cut -f1)
# The disk's own rate for a file of that size, flushed.
dd_s=$( { /usr/bin/time -f "%e" dd if=/dev/zero of="$work/dd.bin" bs=1M count=$(( (bytes + 1048575) / 1048576 )) \
  conv=fdatasync status=none; } 2>&1 | tail -1)
/usr/bin/python3 - "$work" "$steps" "$interval" "$bytes" "$dd_s" <<'PY'
import csv, statistics, sys
work, steps, interval, size, dd_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
def step_ms(tag):
    rows = list(csv.DictReader(open(f"{work}/r-{tag}/loss.csv")))
    # loss.csv's elapsed_s is the time since the run's first step started.
    t = [float(r["elapsed_s"]) for r in rows]
    return [1000 * (b - a) for a, b in zip(t, t[1:])]
none, asy, blk = step_ms("none"), step_ms("async"), step_ms("blocking")
base = statistics.mean(none)
print(f"d=768 L=4 vocab 8192, T=128 B=4 per rank, dp=2 ZeRO-1, 1 thread per rank; {steps} steps, "
      f"a save every {interval} (and after the last)")
print(f"checkpoint: {size / 1e6:.1f} MB; dd writes (and flushes) as many bytes in {dd_s:.2f} s "
      f"({size / 1e6 / max(dd_s, 1e-9):.0f} MB/s)")
print(f"{'run':>16} {'mean step ms':>13} {'x no save':>10} {'median ms':>10} {'x no save':>10} {'mean/median':>12} "
      f"{'slowest ms':>11}")
med = statistics.median(none)
for name, s in (("no save", none), ("background save", asy), ("blocking save", blk)):
    print(f"{name:>16} {statistics.mean(s):>13.1f} {statistics.mean(s) / base:>10.3f} {statistics.median(s):>10.1f} "
          f"{statistics.median(s) / med:>10.3f} {statistics.mean(s) / statistics.median(s):>12.3f} {max(s):>11.1f}")
print("(mean/median: the saves' share of a run's time against its own typical step, which the noise between"
      " runs does not move)")
PY
