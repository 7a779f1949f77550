"""Pipeline parallelism against the same training without it.

usage: check_pipeline.py PARTITA FIXTURE WORK TP PP DP ZERO MICRO SCHEDULE CLIP [COMPILE_FLAG...] [-- NOISE_GLOB...]

Compiles FIXTURE (a models/fixtures name, or a path to a .onnx) with --train at tp x dp (--zero
ZERO) twice, without a pipeline and with --pp PP (COMPILE_FLAGS added to
both, e.g. --untie-embeddings), trains both 10 AdamW steps on the same
tokens over MICRO micro-batches (the pipeline with --schedule SCHEDULE) and
checks:
  - every loss agrees within 1e-6 (relative) and every trained parameter
    (the merged models' initializers) within 1e-6 of the tensor's largest
    magnitude, except the NOISE_GLOB ones, whose gradient is zero in exact
    arithmetic (a key bias: see check_zero.py), where AdamW turns rounding
    into full steps (a glob may end in [a:b]: those rows only, as a fused
    q/k/v bias's key part);
  - each rank's forward program holds only its stage's parameters (a tied
    embedding's table on the first stage, its copy on the last), every
    parameter is on exactly one stage, and the stages' parameters are the
    model's (ONNX initializers);
  - a table two stages hold ends the training equal to the bit on both.
The run without a pipeline is itself checked against PyTorch (check_training.py).
"""
import fnmatch
import os
import sys

import numpy as np
import onnx
from trained_run import Checks, token_file, train_and_merge

partita, name, work = sys.argv[1], sys.argv[2], sys.argv[3]
tp, pp, dp, zero, micro = (int(a) for a in sys.argv[4:9])
schedule, clip = sys.argv[9], sys.argv[10]
rest = sys.argv[11:]
flags, noise = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fixture = name if name.endswith(".onnx") else os.path.join(root, "models", "fixtures", name + ".onnx")
tokens = token_file(work, 5)
check = Checks()


def train(stages):
    # --virtual-stages V (interleaving) only for the pipeline.
    own = flags if stages > 1 else [f for i, f in enumerate(flags) if "--virtual-stages" not in flags[max(i - 1, 0):i + 1]]
    return train_and_merge(partita, fixture, work, f"pp{stages}", tp * stages * dp, tokens,
                           ["--tp", str(tp), "--pp", str(stages), "--dp", str(dp), "--zero", str(zero)] + own,
                           ["--micro-batches", str(micro), "--clip-grad-norm", clip, "--schedule", schedule])


base_losses, base_params, _, _ = train(1)
losses, params, plan, out = train(pp)
check(len(losses) == 10 == len(base_losses), f"{len(losses)} losses at --pp {pp}, {len(base_losses)} without")
for step, (a, b) in enumerate(zip(losses, base_losses), 1):
    err = abs(a - b) / abs(b)
    check(err <= 1e-6, f"step {step}: loss --pp {pp} {a:.7f}, --pp 1 {b:.7f} (relative {err:.1e})")
# A NOISE_GLOB may name rows of a tensor: "h.*.c_attn.bias[32:64]" (a fused key bias).
whole = [g for g in noise if not g.endswith("]")]
rows = [(g[:g.index("[")], *map(int, g[g.index("[") + 1:-1].split(":"))) for g in noise if g.endswith("]")]
compared = [n for n in base_params if not any(fnmatch.fnmatchcase(n, g) for g in whole)]


def difference(n):
    keep = np.ones(base_params[n].shape[0], dtype=bool)
    for g, lo, hi in rows:
        if fnmatch.fnmatchcase(n, g):
            keep[lo:hi] = False
    a, b = params[n][keep], base_params[n][keep]
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12)) if b.size else 0.0


worst = max(difference(n) for n in compared)
# Clipping's norm sums the squares in another order (each stage's, then over
# pp): its coefficient can differ in the last bit, which ten AdamW steps grow.
tol = 2e-6 if float(clip) > 0 else 1e-6
# A table two stages hold (a tied head) sums its two gradients after the dp
# reduction and the micro-batches, (a0 + a1) + (b0 + b1) where one stage sums
# (a0 + b0) + (a1 + b1): where the embedding's and the head's parts nearly
# cancel the last bits differ, and every later step's activations with them.
if plan["pipeline_weights"] and (dp > 1 or int(micro) > 1):
    tol = 5e-5
check(set(params) == set(base_params) and worst <= tol and len(compared) > len(base_params) // 2,
      f"{len(compared)} of {len(params)} trained initializers equal --pp 1's (largest relative difference "
      f"{worst:.1e}, bound {tol:.0e}; left out: {', '.join(sorted(set(base_params) - set(compared))) or 'none'})")

# Each stage holds its own parameters, and together they are the model's.
initializers = {t.name for t in onnx.load(fixture, load_external_data=False).graph.initializer}
stage_of = dict(zip(plan["params"], plan["param_stages"]))
targets = {t["initializer"] for ts in plan["param_targets"] for t in ts}  # a fused q/k/v piece's is the whole
check(len(stage_of) == len(plan["params"]) and targets <= initializers and set(stage_of.values()) ==
      set(range(pp * plan["virtual_stages"])), f"{len(stage_of)} parameters of the model's initializers over stages "
                      f"{sorted(set(stage_of.values()))}")
for r in plan["ranks"]:
    held = set()
    for name, path in plan["roles"][r["role"]]["programs"].items():
        if name.split(".")[0] == "forward":
            fwd = onnx.load(os.path.join(out, path), load_external_data=False)
            held |= {t.name for t in fwd.graph.initializer if t.name in stage_of}
    # The rank's stages: its pp coordinate, and with virtual stages that plus k x pp.
    mine = {p for p, s in stage_of.items() if s % pp == r["coords"]["pp"]}
    check(held == mine, f"rank {r['rank']} (stage {r['coords']['pp']}) holds {len(held)} parameters, its "
                        f"stage's {len(mine)}" + ("" if held == mine else f": extra {sorted(held - mine)[:3]}"))

# A table two stages hold (a tied head's) is one parameter: after ten steps
# each rank's copy equals, to the bit, the shard of the weight it copies.
res = os.path.join(work, f"res-pp{pp}")
for e in plan["pipeline_weights"]:
    copy = f"{e['value']}.stage{e['to']}"
    check(copy in stage_of and stage_of[copy] == e["to"] and stage_of[e["value"]] == e["from"],
          f"{copy} is a parameter of stage {e['to']}, {e['value']} of stage {e['from']}")
    for r in plan["ranks"]:
        if r["coords"]["pp"] != e["to"] % pp:
            continue
        twin = next(q for q in plan["ranks"] if q["coords"]["pp"] == e["from"] % pp and
                    all(q["coords"][a] == c for a, c in r["coords"].items() if a != "pp"))
        a = np.load(os.path.join(res, f"rank{r['rank']}", copy + ".npy"))
        b = np.load(os.path.join(res, f"rank{twin['rank']}", e["value"] + ".npy"))
        check(a.shape == b.shape and np.array_equal(a, b),
              f"rank {r['rank']}'s {copy} equals rank {twin['rank']}'s {e['value']} after 10 steps")

sys.exit(check.exit_code("check_pipeline"))
