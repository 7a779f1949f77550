"""bench/pipeline.sh's reading of a `launch --trace` file of a pipeline.

  pipeline_idle.py balance TRACE P V
      each stage's busy time per micro-batch (forward + backward, less the
      waits for a partita.Recv), median over the steps after the first.
  pipeline_idle.py idle TRACE PLAN_JSON SCHEDULE M P V
      per stage, per step after the first:
        idle      1 - its busy time / the pipeline's span (the first forward's
                  start to the last backward's end over all ranks);
        formula   (p-1)/(m+p-1), interleaved (p-1)/(v*m+p-1): every stage
                  equally fast, each op's output leaving at its end; and
                  the same with the backward split as Partita's is: with
                  forward and backward times f and b (medians) and alpha the
                  share of a backward done when it sends its input's gradient
                  (the weights' gradients come after), (p-1)(f + alpha b) /
                  (v m (f + b) + (p-1)(f + alpha b));
        bubble    idle less load imbalance (the busiest stage's busy time less
                  this one's, over the span): the busiest stage's idle, what
                  the formula describes;
        simulated the idle the same schedule has on the busy times measured
                  with free communication, each op reading its input where it
                  did (its first receive) and sending where it did (a
                  backward sends its input's gradient before computing its
                  weights' gradients), and the runtime's excess over it (idle
                  less simulated, as a share of the step);
      and the most micro-batches in flight on a stage with their saved
      activations (the forward's outputs the backward reads, from plan.json).
A "busy" time is an op's duration less the waits inside it ("wait" slices).
"""
import json
import math
import statistics
import sys


def load(trace):
    return [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X"]


def kind_chunk(e):
    name = e["name"]
    return name.split()[0], int(name.split("(chunk ")[1].split(")")[0]) if "(chunk" in name else 0


class Step:
    """One step's forwards and backwards on every rank (the first step, with
    its one-time set-up, is left out by the callers)."""

    def __init__(self, events, name, p):
        spans = {e["tid"]: (e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == name}
        self.inside = [e for e in events if e["cat"] == "compute" and not e["name"].startswith("optimizer")
                       and spans[e["tid"]][0] <= e["ts"] <= spans[e["tid"]][1]]
        self.start = min(e["ts"] for e in self.inside)
        self.end = max(e["ts"] + e["dur"] for e in self.inside)
        self.waits = {r: [w for w in events if w["cat"] == "wait" and w["tid"] == r] for r in range(p)}
        self.sends = {r: sorted(x["ts"] for x in events if x["cat"] == "collective" and x["name"].startswith("Send")
                                and x["tid"] == 1000 + r) for r in range(p)}
        self.ops = {r: sorted((e for e in self.inside if e["tid"] == r), key=lambda e: e["ts"]) for r in range(p)}

    def busy_before(self, r, e, t):
        """Rank r's op e: its busy time from its start to t."""
        return t - e["ts"] - sum(w["dur"] for w in self.waits[r] if e["ts"] <= w["ts"] < t)

    def busy(self, r, e):
        return self.busy_before(r, e, e["ts"] + e["dur"])

    def total(self, r):
        return sum(self.busy(r, e) for e in self.ops[r])


def steps(events, p):
    names = sorted({e["name"] for e in events if e["cat"] == "step"}, key=lambda s: int(s.split()[1]))[1:]
    return [Step(events, n, p) for n in names]


def simulate(ops, p, v):
    """Each rank's idle fraction: ops[r] = [(kind, chunk, micro, busy, needs,
    sends)] in the order rank r ran them; an op starts when its rank is free
    and reaches `needs` (its first receive) no earlier than its producer
    reached `sends` (a forward's input from the previous stage's forward, a
    backward's from the next stage's backward)."""
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
    assert all(pos[r] == len(mine) for r, mine in ops.items()), "the ops' order deadlocks: a trace cut short?"
    span = max(clock.values())
    return {r: 1 - sum(o[3] for o in mine) / span for r, mine in ops.items()}


def timed_ops(step, r):
    """Rank r's ops of `step` for simulate(): where each read its input (the
    busy time before its first wait, the median over the ops of its kind and
    chunk that waited; none did: 0) and where it sent (its first send; none:
    its end)."""
    needs = {}
    for e in step.ops[r]:
        w = [x["ts"] for x in step.waits[r] if e["ts"] <= x["ts"] <= e["ts"] + e["dur"]]
        if w:
            needs.setdefault(kind_chunk(e), []).append(step.busy_before(r, e, w[0]))
    out = []
    for e in step.ops[r]:
        mine = [t for t in step.sends[r] if e["ts"] <= t <= e["ts"] + e["dur"]]
        out.append((*kind_chunk(e), int(e["name"].split()[-1]), step.busy(r, e),
                    statistics.median(needs[kind_chunk(e)]) if kind_chunk(e) in needs else 0.0,
                    step.busy_before(r, e, mine[0]) if mine else step.busy(r, e)))
    return out


def balance(trace, p, v):
    events = load(trace)
    per = {r: [] for r in range(p)}
    for s in steps(events, p):
        micro = len([e for e in s.ops[0] if e["name"].startswith("forward")]) // v
        for r in range(p):
            per[r].append(s.total(r) / micro / 1e3)
    t = {r: statistics.median(x) for r, x in per.items()}
    print("busy per micro-batch: " + ", ".join(f"stage {r} {t[r]:.2f} ms" for r in range(p)))


def idle(trace, plan_path, schedule, m, p, v):
    events = load(trace)
    plan = json.load(open(plan_path))
    got = {r: [] for r in range(p)}
    bubble = {r: [] for r in range(p)}
    simulated = {r: [] for r in range(p)}
    inflight = {r: 0 for r in range(p)}
    times, alpha = {"forward": [], "backward": []}, []
    for s in steps(events, p):
        span = s.end - s.start
        totals = {r: s.total(r) for r in range(p)}
        ops = {r: timed_ops(s, r) for r in range(p)}
        for r, x in simulate(ops, p, v).items():
            simulated[r].append(x)
        for r in range(p):
            for kind, c, k, d, needs, sends in ops[r]:
                times[kind].append(d)
                if kind == "backward" and c * p + r > 0:  # it sends its input's gradient
                    alpha.append(sends / d)
        for r in range(p):
            got[r].append(1 - totals[r] / span)
            bubble[r].append(1 - max(totals.values()) / span)
            live = 0
            for e in s.ops[r]:
                live += 1 if e["name"].startswith("forward") else -1
                inflight[r] = max(inflight[r], live if e["name"].startswith("forward") else live + 1)
    want = (p - 1) / (v * m + p - 1)
    # The formula with the backward split: the stage before waits for the
    # share alpha of a backward (up to its input gradient's send), not all of it.
    tf, tb, a = statistics.median(times["forward"]), statistics.median(times["backward"]), statistics.median(alpha)
    fill = (p - 1) * (tf + a * tb)
    split = fill / (v * m * (tf + tb) + fill)
    print(f"{schedule:11} m={m}: a forward {tf / 1e3:.2f} ms, a backward {tb / 1e3:.2f} ms, its input gradient sent "
          f"after {a:.2f} of it: the formula with the split backward {split:.3f}")
    saved = {}
    for rank in plan["ranks"]:  # per micro-batch, over the rank's chunks
        total = 0
        for name, f in plan["roles"][rank["role"]]["programs"].items():
            if name.split(".")[0] != "forward":
                continue
            outs = plan["program_io"][f]["outputs"]
            bwd = {t["name"] for t in plan["program_io"][f.replace("forward", "backward")]["inputs"]}
            total += sum(math.prod(t["shape"]) * 4 for t in outs if t["name"] in bwd)
        saved[rank["coords"]["pp"]] = total / v
    for r in range(p):
        i, b, sim = (statistics.median(x[r]) for x in (got, bubble, simulated))
        print(f"{schedule:11} m={m}: stage {r} idle {i:.3f} (formula {want:.3f}, ratio {i / want:.2f}; with the "
              f"split backward ratio {i / split:.2f}; bubble {b:.3f}, ratio {b / want:.2f} and {b / split:.2f}; its "
              f"schedule on the times measured {sim:.3f}, the runtime's excess {(i - sim) * 100:+.1f}% of the step); "
              f"at most {inflight[r]} micro-batches in flight, {inflight[r] * saved[r] / 1e6:.1f} MB of saved "
              "activations")


if __name__ == "__main__":
    if sys.argv[1] == "balance":
        balance(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        idle(sys.argv[2], sys.argv[3], sys.argv[4], *(int(a) for a in sys.argv[5:8]))
