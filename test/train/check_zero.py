"""ZeRO against plain data parallelism: the same training, partitioned.

usage: check_zero.py PARTITA FIXTURE WORK TP DP MICRO STAGE CLIP [ZERO_GRADIENT_GLOB...]

Compiles FIXTURE (a models/fixtures name) with --train at tp x dp twice, with
--zero 0 and --zero STAGE, trains both 10 AdamW steps on the same tokens and
checks:
  - every loss and every trained parameter (the merged models' initializers)
    agree within 1e-6 (relative to the tensor's largest magnitude; 1e-5 for
    the parameters at stage 2 over several micro-batches, see below), except
    the parameters ZERO_GRADIENT_GLOB names: those whose gradient is zero in
    exact arithmetic (a key bias: softmax is invariant to adding one value
    to a row of scores), where AdamW turns rounding noise into full-size
    steps, so any change of summation order (reduce-scatter and all-reduce
    add in different orders, the norm's square sums too) moves them by lr;
  - each rank's step program holds exactly its part of the optimizer state:
    per weight, moments of ceil(n / dp) elements where n is the weight's
    elements on the rank (its tp shard: the model's initializer shape and
    the plan's layout), padded up to a multiple of dp - and the backward
    returns gradients of that size, its reduce-scatter's part (at stage 1 the
    whole gradients are summed over micro-batches where it stages them and
    reduced once; at stage 2 every micro-batch's is reduced); at
    stage 3 the parameter itself, as the step reads it and as the forward
    program stores it (its initializer), has that size too, and every
    rank's forward holds fewer weight elements than the --zero 0 forward.
The reference sizes come from the ONNX initializers and the formula, not
from the compiler's output.
"""
import fnmatch
import math
import os
import sys

import numpy as np
import onnx
from trained_run import Checks, token_file, train_and_merge

partita, name, work = sys.argv[1], sys.argv[2], sys.argv[3]
tp, dp, micro, stage = (int(a) for a in sys.argv[4:8])
clip, noise = sys.argv[8], sys.argv[9:]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fixture = os.path.join(root, "models", "fixtures", name + ".onnx")
os.makedirs(work, exist_ok=True)
tokens = token_file(work, 3)
check = Checks()


def train(z):
    losses, params, plan, _ = train_and_merge(
        partita, fixture, work, f"z{z}", tp * dp, tokens,
        ["--tp", str(tp), "--dp", str(dp), "--zero", str(z), "--bucket-mb", "0.01"],
        ["--micro-batches", str(micro), "--clip-grad-norm", clip])
    return losses, params, plan


base_losses, base_params, base_plan = train(0)
losses, params, plan = train(stage)
check(len(losses) == 10 == len(base_losses), f"{len(losses)} losses at --zero {stage}, {len(base_losses)} at 0")
for step, (a, b) in enumerate(zip(losses, base_losses), 1):
    err = abs(a - b) / abs(b)
    check(err <= 1e-6, f"step {step}: loss --zero {stage} {a:.7f}, --zero 0 {b:.7f} (relative {err:.1e})")
compared = [n for n in base_params if not any(fnmatch.fnmatchcase(n, g) for g in noise)]
worst = max(float(np.abs(params[n] - base_params[n]).max() / max(np.abs(base_params[n]).max(), 1e-12))
            for n in compared)
# Over several micro-batches stage 2 reduces each one (DeepSpeed's stage 2:
# only the rank's part of the gradient is kept), where --zero 0 sums them on
# each rank and reduces once: sums in another order, rounding apart by
# about 1e-7, which ten AdamW steps grow to a few 1e-6. Hence 1e-5 there.
tol = 1e-5 if stage >= 2 and micro > 1 else 1e-6
check(set(params) == set(base_params) and worst <= tol and len(compared) > len(base_params) // 2,
      f"{len(compared)} of {len(params)} trained initializers equal --zero 0's (largest relative difference "
      f"{worst:.1e}, bound {tol:.0e}; left out: {', '.join(sorted(set(base_params) - set(compared))) or 'none'})")

# Each rank's share of the optimizer state, by the formula.
shapes = {t.name: list(t.dims) for t in onnx.load(fixture).graph.initializer}
for r in plan["ranks"]:
    io = plan["program_io"]
    step_in = {t["name"]: t for t in io[plan["roles"][r["role"]]["programs"]["step"]]["inputs"]}
    bwd_out = {t["name"]: t for t in io[plan["roles"][r["role"]]["programs"]["backward"]]["outputs"]}
    bad = []
    for p, layout in zip(plan["params"], plan["param_layouts"]):
        # The rank's tp shard of the weight: the initializer's elements, over tp when tp splits it.
        if p not in shapes:
            bad.append(f"parameter {p} is no initializer of the model")
            continue
        local = math.prod(shapes[p]) // (tp if layout.get("tp", "R") != "R" else 1)
        want = math.ceil(local / dp)
        for key in ("adam_m." + p, "adam_v." + p):
            got = math.prod(step_in[key]["shape"])
            if got != want:
                bad.append(f"{key} has {got} elements, want ceil({local}/{dp}) = {want}")
        grad = math.prod(bwd_out["grad." + p]["shape"])
        if grad != want:
            bad.append(f"grad.{p} has {grad} elements, want {want}")
        held = math.prod(step_in[p]["shape"])
        if held != (want if stage >= 3 else local):
            bad.append(f"the step reads {p} with {held} elements, want {want if stage >= 3 else local}")
    check(not bad, f"rank {r['rank']}: optimizer state partitioned over dp={dp}" + ("" if not bad else ": " + "; ".join(bad[:3])))



def forward_weights(out, plan, rank):
    """Elements of the trained initializers rank `rank`'s forward program stores."""
    fwd = onnx.load(os.path.join(out, plan["roles"][plan["ranks"][rank]["role"]]["programs"]["forward"]), load_external_data=False)
    return {t.name: math.prod(t.dims) for t in fwd.graph.initializer if t.name in plan["params"]}


if stage >= 3:
    base_held = sum(forward_weights(os.path.join(work, "z0"), base_plan, 0).values())
    for r in range(len(plan["ranks"])):
        held = forward_weights(os.path.join(work, f"z{stage}"), plan, r)
        check(len(held) == len(plan["params"]) and sum(held.values()) < base_held and
              sum(held.values()) <= math.ceil(base_held / dp) + len(held) * dp,
              f"rank {r}: the forward stores {sum(held.values())} parameter elements, "
              f"--zero 0's {base_held} (1/dp plus padding: <= {math.ceil(base_held / dp) + len(held) * dp})")

sys.exit(check.exit_code("check_zero"))
