#!/usr/bin/env bash
# Benchmark (not a test): the pipeline's bubble, measured. A GPT of equal layers
# (d=512, 8 heads, sequence 128, batch 2, vocabulary 64) is cut into STAGES stages
# of 8 layers each, as deep as real pipelines' (GPT-3: 96 layers on 8 stages), so
# that the embedding on the first stage and the final norm, head and loss on the
# last weigh little beside a stage; interleaved: 2 model chunks of 4 layers per
# rank. Each stage is one rank of 1 thread. It trains 10 steps of M micro-batches
# with GPipe, 1F1B and interleaved 1F1B, each with `launch --trace`.
# bench/pipeline_idle.py reads the traces: each stage's busy time per micro-batch
# (1F1B), and per stage the idle fraction against (p-1)/(m+p-1) ((p-1)/(2m+p-1)
# interleaved), which assumes equally fast stages; the bubble (the busiest stage's
# idle: what is left once load imbalance is taken out); the idle its schedule has on
# the busy times measured with free communication, and the runtime's excess over it
# as a share of the step; the most micro-batches in flight with their saved
# activations' bytes (GPipe M, 1F1B at most p).
# Then activation recompute (none, selective, full) on the 1F1B run of the last M:
# each stage's saved bytes per micro-batch and the step time, as ratios to none's.
# On 2 cores 2 stages run one rank per core; more stages oversubscribe (said below).
# LAYERS=k (layers per stage) and D=d (width) change the model.
#   bash bench/pipeline.sh [STAGES] [MICRO_BATCHES...]
set -euo pipefail
cd "$(dirname "$0")/.."
stages=${1:-2}
shift || true
micros=("$@")
[ ${#micros[@]} -gt 0 ] || micros=(4 8)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
idle() { /usr/bin/python3 bench/pipeline_idle.py "$@"; }
per=${LAYERS:-8} d=${D:-512}
/usr/bin/python3 models/export_gpt.py --d "$d" --heads $((d / 64)) --layers $((stages * per)) --seq 128 --batch 2 \
  --vocab 64 -o "$work/gpt.onnx" 2>/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 64, 100000))"
split=$(/usr/bin/python3 -c "print(','.join(['$per'] * $stages))")
build/tools/partita compile "$work/gpt.onnx" --train --pp "$stages" --pp-layers "$split" --untie-embeddings \
  -o "$work/plan" | grep "pipeline stage"
[ "$stages" -le "$(nproc)" ] || echo "note: $stages ranks on $(nproc) cores: oversubscribed, the idle fractions include waiting for a core"
build/tools/partita compile "$work/gpt.onnx" --train --pp "$stages" --virtual-stages 2 --untie-embeddings \
  -o "$work/plan-interleaved" >/dev/null
for m in "${micros[@]}"; do
  for schedule in gpipe 1f1b interleaved; do
    plan="$work/plan"; v=1
    if [ "$schedule" = interleaved ]; then plan="$work/plan-interleaved"; v=2; fi
    build/tools/partita launch -n "$stages" "$plan" --steps 10 --data "$work/tokens.npy" --batch 2 --seq 128 \
      --micro-batches "$m" --schedule "$schedule" --threads 1 --output-dir "$work/r-$schedule-$m" \
      --trace "$work/trace-$schedule-$m.json" >/dev/null 2>&1
    [ "$schedule" != 1f1b ] || idle balance "$work/trace-$schedule-$m.json" "$stages" 1 | sed "s/^/1f1b        m=$m: /"
    idle idle "$work/trace-$schedule-$m.json" "$plan/plan.json" "$schedule" "$m" "$stages" "$v"
  done
done
# Activation recompute on the same pipeline (1F1B, the last M): what each stage
# saves per micro-batch, and the step time, against --recompute none.
m=${micros[-1]}
for r in none selective full; do
  [ "$r" = none ] || build/tools/partita compile "$work/gpt.onnx" --train --pp "$stages" --pp-layers "$split" \
    --untie-embeddings --recompute "$r" -o "$work/plan-$r" >/dev/null
  plan="$work/plan"; [ "$r" = none ] || plan="$work/plan-$r"
  build/tools/partita launch -n "$stages" "$plan" --steps 10 --data "$work/tokens.npy" --batch 2 --seq 128 \
    --micro-batches "$m" --threads 1 --output-dir "$work/rr-$r" >/dev/null 2>&1
  cp "$plan/plan.json" "$work/plan-$r.json"
done
/usr/bin/python3 - "$work" "$stages" <<'PY'
import csv, json, math, statistics, sys
work, p = sys.argv[1], int(sys.argv[2])
def saved(r):
    plan = json.load(open(f"{work}/plan-{r}.json"))
    out = {}
    for rank in plan["ranks"]:
        programs = plan["roles"][rank["role"]]["programs"]
        outs = plan["program_io"][programs["forward"]]["outputs"]
        bwd = {t["name"] for t in plan["program_io"][programs["backward"]]["inputs"]}
        out[rank["coords"]["pp"]] = sum(math.prod(t["shape"]) * 4 for t in outs if t["name"] in bwd)
    return out
def step(r):  # the median step time after the first
    rows = list(csv.DictReader(open(f"{work}/rr-{r}/loss.csv")))
    t = [float(b["elapsed_s"]) - float(a["elapsed_s"]) for a, b in zip(rows, rows[1:])]
    return statistics.median(t)
base, base_t = saved("none"), step("none")
for r in ("none", "selective", "full"):
    s, t = saved(r), step(r)
    print(f"recompute {r:9}: saved per micro-batch " + ", ".join(
        f"stage {k} {s[k] / 1e6:.2f} MB (x{s[k] / base[k]:.2f})" for k in sorted(s)) +
        f"; step {t * 1e3:.0f} ms (x{t / base_t:.2f})")
PY
