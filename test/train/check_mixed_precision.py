#!/usr/bin/python3
"""bf16 and fp16 training track fp32 for 50 AdamW steps, within a bound from the precision.

Compiles FIXTURE three times (`--precision fp32|bf16|fp16`, the same COMPILE_FLAGS), trains
each on the same batches for 50 steps on N ranks, and compares every step's loss with the
fp32 run's:

  |loss_half - loss_fp32| / loss_fp32 <= 4 u   at every step,

u being the half type's unit roundoff (2^-8 for bf16's 8-bit significand, 2^-11 for fp16's
11-bit one): each activation and gradient is rounded once per op (relative error <= u); the
loss, a mean over many tokens, averages those errors out, and four of them is the room left for
the rounding to compound through the layers and to move the 50-step trajectory (measured on the
GPT fixture: 0.5 u for bf16, 1.2 u for fp16). The bound must also be met for a reason: the half runs must differ from
fp32 (a precision flag that rounded nothing would pass it trivially), bf16 by more than fp16
(the coarser type), and all three must learn (final loss 1% below the first at least; random tokens: ln 64 is the floor).
The half runs must write float32 master weights, most of whose values the half type cannot hold
(the model's own copy is rounded to it). The half runs must also save what the backward reads in the half type: the bytes of rank 0's
saved activations (plan.json: its forward program's outputs named in schedule.saved) at most
0.6 of fp32's (half, plus the fp32 loss's values and what else stays fp32).

Usage: check_mixed_precision.py PARTITA FIXTURE.onnx WORK_DIR RANKS [COMPILE_FLAG...] [--launch LAUNCH_FLAG...]

(--launch: what follows goes to every launch, e.g. --micro-batches 4 --schedule interleaved. A launch
that does not finish within 10 minutes fails the test: a pipeline that deadlocks is caught here.)
"""
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np

partita, fixture, work, ranks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
flags = sys.argv[5:]
launch_flags = []
if "--launch" in flags:
    launch_flags = flags[flags.index("--launch") + 1:]
    flags = flags[:flags.index("--launch")]
STEPS, B, T, LR, VOCAB = 50, 2, 16, 1e-2, 64
UNIT_ROUNDOFF = {"bf16": 2.0**-8, "fp16": 2.0**-11}

shutil.rmtree(work, ignore_errors=True)  # this test's own folder
os.makedirs(work)
tokens = os.path.join(work, "tokens.npy")
np.save(tokens, np.random.default_rng(0).integers(0, VOCAB, 4000).astype(np.int64))


def train(precision):
    compiled, out = os.path.join(work, precision), os.path.join(work, precision + ".run")
    subprocess.run([partita, "compile", fixture, "--train", "--precision", precision, *flags, "-o", compiled],
                   check=True, stdout=subprocess.DEVNULL)
    # fp16: a loss scale these gradients do not overflow (fp16 weight gradients would at DeepSpeed's
    # 2^16, and the skipped steps would put the run a step behind fp32's); overflows are
    # launch/fp16-overflow.test's.
    scale = ["--initial-scale-power", "8"] if precision == "fp16" else []
    subprocess.run([partita, "launch", "-n", str(ranks), compiled, "--steps", str(STEPS), "--data", tokens,
                    "--batch", str(B), "--seq", str(T), "--lr", str(LR), "--threads", "1", *scale, *launch_flags,
                    "--output-dir", out, "--device", os.environ.get("PARTITA_TEST_DEVICE", "cpu")],  # per test: CMakeLists.txt
                   check=True, stdout=subprocess.DEVNULL, timeout=600)
    with open(os.path.join(out, "loss.csv")) as f:
        rows = list(csv.DictReader(f))
    if [int(r["step"]) for r in rows] != list(range(1, STEPS + 1)):
        sys.exit(f"FAIL {precision}: loss.csv lacks steps (a skipped step?): {[r['step'] for r in rows]}")
    return np.array([float(r["loss"]) for r in rows])


DTYPE_BYTES = {"f32": 4, "bf16": 2, "f16": 2}


def saved_bytes(precision):
    with open(os.path.join(work, precision, "plan.json")) as f:
        plan = json.load(f)
    saved = set(plan["schedule"]["saved"])
    forward = next(io for name, io in plan["program_io"].items() if name.startswith("rank0/forward"))
    return sum(DTYPE_BYTES[o["dtype"]] * int(np.prod(o["shape"])) for o in forward["outputs"] if o["name"] in saved)


losses = {p: train(p) for p in ("fp32", "bf16", "fp16")}
failed = 0
for p in ("bf16", "fp16"):
    ratio = saved_bytes(p) / saved_bytes("fp32")
    ok = ratio <= 0.6
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {p} saves {saved_bytes(p)} bytes of activations per micro-batch on rank 0, "
          f"{ratio:.2f} of fp32's {saved_bytes('fp32')}")
deviation = {}
for p in ("bf16", "fp16"):
    rel = np.abs(losses[p] - losses["fp32"]) / losses["fp32"]
    deviation[p] = rel.max()
    bound = 4 * UNIT_ROUNDOFF[p]
    worst = int(rel.argmax()) + 1
    ok = rel.max() <= bound
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {p}: largest relative loss deviation from fp32 {rel.max():.2e} "
          f"(step {worst}: {losses[p][worst - 1]:.6f} vs {losses['fp32'][worst - 1]:.6f}), bound 4u = {bound:.2e}")
for p, least in (("bf16", 1e-4), ("fp16", 1e-6)):
    ok = deviation[p] > least
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {p} differs from fp32 (largest deviation {deviation[p]:.2e} > {least:g})")
ok = deviation["bf16"] > deviation["fp16"]
failed += not ok
print(f"{'PASS' if ok else 'FAIL'} bf16 deviates more than fp16 ({deviation['bf16']:.2e} > {deviation['fp16']:.2e})")
# The model computes with its parameters rounded to the half type, and AdamW updates float32
# master copies (the ZeRO paper's 2 + 2 + 12 layout): what a run writes is the masters, float32
# values most of which the half type cannot hold (a run writing its rounded copies has none).
for p in ("bf16", "fp16"):
    folder = os.path.join(work, p + ".run", "rank0")
    values = [np.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".npy")]
    flat = np.concatenate([v.ravel() for v in values])
    exact = flat.view(np.uint32) & 0xFFFF == 0 if p == "bf16" else flat.astype(np.float16).astype(np.float32) == flat
    ok = all(v.dtype == np.float32 for v in values) and exact.mean() < 0.5
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {p} writes float32 master weights: {exact.mean():.1%} of "
          f"{flat.size} trained values are {p} values")
for p, l in losses.items():
    ok = l[-1] < 0.99 * l[0]
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {p} learns: loss {l[0]:.4f} -> {l[-1]:.4f}")
sys.exit(1 if failed else 0)
