#!/usr/bin/env bash
# Benchmark (not a test): what mixed precision saves and costs on one model, measured in one
# run. The d=768, 4-layer GPT (vocabulary 8192, seq 128, batch 4 per rank) trains STEPS steps
# at dp=2 under ZeRO-2 (2 ranks of 1 thread) with --precision fp32, bf16 and fp16; per
# precision it prints rank 0's saved activations per micro-batch (plan.json), the activation
# memory `partita inspect` predicts, the gradient bytes dp's reduce-scatter sent per step
# (`launch --profile`), the largest rank's peak RSS and the median step time, each also as a
# ratio to fp32's, and the final loss.
#   bash bench/mixed_precision.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 --vocab 8192 \
  -o "$work/gpt.onnx" 2>/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 8192, 100000))"
for p in fp32 bf16 fp16; do
  build/tools/partita compile "$work/gpt.onnx" --train --precision "$p" --dp 2 --zero 2 -o "$work/$p" >/dev/null
  build/tools/partita inspect "$work/$p" >"$work/inspect-$p.txt"
  /usr/bin/time -f "%M" -o "$work/rss-$p.txt" build/tools/partita launch -n 2 "$work/$p" --steps "$steps" \
    --data "$work/tokens.npy" --batch 4 --seq 128 --lr 1e-4 --threads 1 --initial-scale-power 8 --profile \
    --output-dir "$work/r-$p" >"$work/launch-$p.txt"
done
/usr/bin/python3 - "$work" <<'PY'
import csv, json, re, statistics, sys
import numpy as np
work = sys.argv[1]
BYTES = {"f32": 4, "bf16": 2, "f16": 2}
rows = []
for p in ("fp32", "bf16", "fp16"):
    plan = json.load(open(f"{work}/{p}/plan.json"))
    fwd = next(io for n, io in plan["program_io"].items() if n.startswith("rank0/forward"))
    saved = sum(BYTES[o["dtype"]] * int(np.prod(o["shape"])) for o in fwd["outputs"]
                if o["name"] in set(plan["schedule"]["saved"])) / 1e6
    activ = float(re.search(r"predicted, MB\): .*activations ([0-9.]+)", open(f"{work}/inspect-{p}.txt").read()).group(1))
    rs = float(re.search(r"reduce-scatter ([0-9.]+)", open(f"{work}/launch-{p}.txt").read()).group(1))
    rss = int(open(f"{work}/rss-{p}.txt").read().split()[-1]) / 1024
    log = list(csv.DictReader(open(f"{work}/r-{p}/loss.csv")))
    ms = statistics.median(2 * 4 * 128 / float(r["tokens_per_s"]) * 1000 for r in log[1:])
    rows.append((p, saved, activ, rs, rss, ms, float(log[-1]["loss"])))
base = rows[0]
print("d=768 L=4 vocab 8192, T=128 B=4 per rank, dp=2 ZeRO-2, 1 thread per rank (rank 0)")
print(f"{'':>5} {'saved MB':>9} {'x fp32':>7} {'activ. MB':>10} {'x fp32':>7} {'grad RS MB':>11} {'x fp32':>7} "
      f"{'peak RSS':>9} {'x fp32':>7} {'step ms':>8} {'x fp32':>7} {'loss':>8}")
for p, saved, activ, rs, rss, ms, loss in rows:
    print(f"{p:>5} {saved:>9.1f} {saved / base[1]:>7.2f} {activ:>10.1f} {activ / base[2]:>7.2f} {rs:>11.2f} "
          f"{rs / base[3]:>7.2f} {rss:>9.0f} {rss / base[4]:>7.2f} {ms:>8.1f} {ms / base[5]:>7.2f} {loss:>8.4f}")
PY
