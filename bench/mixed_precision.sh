#!/usr/bin/env bash
# Benchmark (not a test): what mixed precision saves and costs on one model, measured in one
# run. The d=768, 4-layer GPT (vocabulary 8192, seq 128, batch 4 per rank) trains STEPS steps
# at dp=2 under ZeRO-2 (2 ranks of 1 thread) with --precision fp32, bf16 and fp16; per
# precision it prints rank 0's saved activations per micro-batch (plan.json), the activation
# memory and model states (parameters + gradients + optimizer states) `partita inspect`
# predicts, the gradient bytes dp's reduce-scatter and the parameter bytes its all-gather sent
# per step (`launch --profile`), the largest rank's peak RSS and the median step time, each
# also as a ratio to fp32's, and the final loss.
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
    line = re.search(r"memory of rank 0 \(predicted, MB\): (.*); peak", open(f"{work}/inspect-{p}.txt").read()).group(1)
    cats = {k: float(v) for k, v in (c.rsplit(" ", 1) for c in line.split(", "))}
    activ = cats["activations"]
    states = cats["parameters"] + cats["gradients"] + cats["optimizer states"]
    traffic = open(f"{work}/launch-{p}.txt").read()
    rs = float(re.search(r"reduce-scatter ([0-9.]+)", traffic).group(1))
    ag = float(re.search(r"dp .*all-gather ([0-9.]+)", traffic).group(1))
    rss = int(open(f"{work}/rss-{p}.txt").read().split()[-1]) / 1024
    log = list(csv.DictReader(open(f"{work}/r-{p}/loss.csv")))
    ms = statistics.median(2 * 4 * 128 / float(r["tokens_per_s"]) * 1000 for r in log[1:])
    rows.append((p, saved, activ, states, rs, ag, rss, ms, float(log[-1]["loss"])))
base = rows[0]
print("d=768 L=4 vocab 8192, T=128 B=4 per rank, dp=2 ZeRO-2, 1 thread per rank (rank 0)")
heads = ["saved MB", "activ. MB", "states MB", "grad RS MB", "param AG MB", "peak RSS", "step ms"]
print(f"{'':>5} " + " ".join(f"{h:>11} {'x fp32':>6}" for h in heads) + f" {'loss':>8}")
for p, *values, loss in rows:
    print(f"{p:>5} " + " ".join(f"{v:>11.1f} {v / b:>6.2f}" for v, b in zip(values, base[1:])) + f" {loss:>8.4f}")
PY
