#!/usr/bin/env bash
# Benchmark (not a test): the pipeline's bubble, measured. A GPT of STAGES x 2 equal
# layers (d=256, vocabulary 64, so the embedding and the head weigh little) is cut into
# STAGES stages (--pp-layers 2,2,...), each one rank of 1 thread, and trains 10 steps of M
# micro-batches with GPipe, 1F1B and interleaved 1F1B, each with `launch --trace`. From the traces, per
# step after the first: each rank's idle fraction (1 - its forward and backward time, less
# their waits for a partita.Recv, /
# the pipeline's span, the first forward's start to the last backward's end over all
# ranks), against the formula (p-1)/(m+p-1) (interleaved, 2 chunks of one layer per rank:
# (p-1)/(2m+p-1)), which assumes every forward (backward) takes the same time, and
# against the idle the same schedule has on the op times measured, with free
# communication (what the runtime adds: receives, sends, gaps), and the most micro-batches a stage held
# in flight (forwards begun, backwards not done) with their saved activations' bytes
# (the forward's outputs the backward reads, from plan.json): GPipe M, 1F1B at most p.
# Then activation recompute (none, selective, full) on the 1F1B run of the last M: each
# stage's saved bytes per micro-batch and the step time, as ratios to none's.
# On 2 cores 2 stages run one rank per core; more stages oversubscribe (said below).
#   bash bench/pipeline.sh [STAGES] [MICRO_BATCHES...]
set -euo pipefail
cd "$(dirname "$0")/.."
stages=${1:-2}
shift || true
micros=("$@")
[ ${#micros[@]} -gt 0 ] || micros=(4 8)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
layers=$((stages * 2))
/usr/bin/python3 models/export_gpt.py --d 256 --heads 4 --layers "$layers" --seq 128 --batch 2 --vocab 64 \
  -o "$work/gpt.onnx" 2>/dev/null
/usr/bin/python3 -c "import numpy as np; np.save('$work/tokens.npy', np.random.default_rng(0).integers(0, 64, 100000))"
split=$(/usr/bin/python3 -c "print(','.join(['2'] * $stages))")
build/tools/partita compile "$work/gpt.onnx" --train --pp "$stages" --pp-layers "$split" --untie-embeddings \
  -o "$work/plan" | grep "pipeline stage"
[ "$stages" -le "$(nproc)" ] || echo "note: $stages ranks on $(nproc) cores: oversubscribed, the idle fractions include waiting for a core"
# Interleaved: 2 model chunks per rank, one layer each.
build/tools/partita compile "$work/gpt.onnx" --train --pp "$stages" --virtual-stages 2 --untie-embeddings \
  -o "$work/plan-interleaved" >/dev/null
for m in "${micros[@]}"; do
  for schedule in gpipe 1f1b interleaved; do
    plan="$work/plan"; flags=(--schedule "$schedule"); v=1
    if [ "$schedule" = interleaved ]; then plan="$work/plan-interleaved"; flags=(); v=2; fi
    build/tools/partita launch -n "$stages" "$plan" --steps 10 --data "$work/tokens.npy" --batch 2 --seq 128 \
      --micro-batches "$m" "${flags[@]}" --threads 1 --output-dir "$work/r-$schedule-$m" \
      --trace "$work/trace-$schedule-$m.json" >/dev/null 2>&1
    /usr/bin/python3 - "$work/trace-$schedule-$m.json" "$plan/plan.json" "$schedule" "$m" "$stages" "$v" <<'PY'
import json, math, statistics, sys
trace, plan_path, schedule, m, p, v = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
events = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X"]
plan = json.load(open(plan_path))
steps = sorted({e["name"] for e in events if e["cat"] == "step"}, key=lambda s: int(s.split()[1]))[1:]
idle = {r: [] for r in range(p)}
simulated = {r: [] for r in range(p)}
inflight = {r: 0 for r in range(p)}


def simulate(ops):
    """Each rank's idle fraction if its forwards and backwards took the busy
    times measured, in the order it ran them, and communication were free:
    an op starts when the rank is free, and reaches the point where it reads
    its input (its first receive, `needs` into it) no earlier than the
    producer's send (`sends` into the producer: a backward sends its input's
    gradient before its weights' gradients). A forward's input comes from the
    previous stage's forward, a backward's from the next stage's backward (the
    last stage's from its own forward)."""
    sent, pos, clock = {}, {r: 0 for r in ops}, {r: 0.0 for r in ops}
    moved = True
    while moved:
        moved = False
        for r, mine in ops.items():
            while pos[r] < len(mine):
                kind, c, k, d, needs, sends = mine[pos[r]]
                g = c * p + r
                dep = (("forward", g - 1, k) if g > 0 else None) if kind == "forward" else \
                    (("backward", g + 1, k) if g + 1 < p * v else None)
                if dep and dep not in sent:
                    break
                begin = max(clock[r], sent[dep] - needs if dep else 0.0)
                sent[(kind, g, k)] = begin + sends
                clock[r] = begin + d
                pos[r] += 1
                moved = True
    span = max(clock.values())
    return {r: 1 - sum(o[3] for o in mine) / span for r, mine in ops.items()}


for step in steps:
    spans = {e["tid"]: (e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == step}
    inside = [e for e in events if e["cat"] == "compute" and not e["name"].startswith("optimizer")
              and spans[e["tid"]][0] <= e["ts"] <= spans[e["tid"]][1]]
    start = min(e["ts"] for e in inside)
    end = max(e["ts"] + e["dur"] for e in inside)
    ops = {}
    for r in range(p):
        mine = sorted((e for e in inside if e["tid"] == r), key=lambda e: e["ts"])
        # A program waiting for its partita.Recv ("wait" slices inside a forward
        # or backward) is idle: each op's busy time is its duration less those.
        waits = [w for w in events if w["cat"] == "wait" and w["tid"] == r]
        def busy(e):
            return e["dur"] - sum(w["dur"] for w in waits if e["ts"] <= w["ts"] <= e["ts"] + e["dur"])
        idle[r].append(1 - sum(busy(e) for e in mine) / (end - start))
        # "forward 3", "backward (chunk 1) 3": kind, chunk, micro-batch, busy time
        sends = sorted(x["ts"] for x in events if x["cat"] == "collective" and x["name"].startswith("Send")
                       and x["tid"] == 1000 + r)

        def before(e, t):  # busy time from e's start to t
            return t - e["ts"] - sum(w["dur"] for w in waits if e["ts"] <= w["ts"] < t)

        def sent_at(e):  # into its busy time; none: at its end
            mine_ = [t for t in sends if e["ts"] <= t <= e["ts"] + e["dur"]]
            return before(e, mine_[0]) if mine_ else busy(e)

        def kind_chunk(e):
            return e["name"].split()[0], int(e["name"].split("(chunk ")[1].split(")")[0]) if "(chunk" in e["name"] else 0
        # Where an op reads its input: the busy time before its first wait, the
        # median over the ops of its kind and chunk that waited (none did: 0).
        needs = {}
        for e in mine:
            w = [x["ts"] for x in waits if e["ts"] <= x["ts"] <= e["ts"] + e["dur"]]
            if w:
                needs.setdefault(kind_chunk(e), []).append(before(e, w[0]))
        ops[r] = [(*kind_chunk(e), int(e["name"].split()[-1]), busy(e),
                   statistics.median(needs[kind_chunk(e)]) if kind_chunk(e) in needs else 0.0, sent_at(e))
                  for e in mine]
        live = 0
        if r == p - 1:
            for q, got in simulate(ops).items():
                simulated[q].append(got)
        for e in mine:
            live += 1 if e["name"].startswith("forward") else -1
            inflight[r] = max(inflight[r], live if e["name"].startswith("forward") else live + 1)
want = (p - 1) / (v * m + p - 1)
saved = {}
for r in plan["ranks"]:  # per micro-batch, over the rank's chunks
    total = 0
    for name, f in r["programs"].items():
        if name.split(".")[0] != "forward":
            continue
        outs = plan["program_io"][f]["outputs"]
        bwd = {t["name"] for t in plan["program_io"][f.replace("forward", "backward")]["inputs"]}
        total += sum(math.prod(t["shape"]) * 4 for t in outs if t["name"] in bwd)
    saved[r["coords"]["pp"]] = total / v
for r in range(p):
    got, sim = statistics.median(idle[r]), statistics.median(simulated[r])
    print(f"{schedule:11} m={m}: stage {r} idle {got:.3f} (formula {want:.3f}, ratio {got / want:.2f}; "
          f"the measured op times scheduled with free communication {sim:.3f}, ratio {got / sim:.2f}); "
          f"at most {inflight[r]} micro-batches in flight, {inflight[r] * saved[r] / 1e6:.1f} MB of saved activations")
PY
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
        outs = plan["program_io"][rank["programs"]["forward"]]["outputs"]
        bwd = {t["name"] for t in plan["program_io"][rank["programs"]["backward"]]["inputs"]}
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
