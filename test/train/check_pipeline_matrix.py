#!/usr/bin/python3
"""Pipeline parallelism over the whole matrix, for one model.

usage: check_pipeline_matrix.py PARTITA KIND WORK [LAYOUT...]

KIND is a models/export_models.py model (gpt_fused_tied, gpt_separate_untied,
llama, bert_mlm, gpt_bool_mask, ...), exported here with 8 layers (so 4 stages of 2 model
chunks divide them); LLaMA with 8 query heads in 4 key/value groups (tp 4
splits whole groups; above the key/value heads Partita replicates their projections). Each LAYOUT is TPxPPxDP; by default every one with PP in
{2, 4} and TP·PP·DP <= 8 (9 layouts). For each layout:

  training, for micro-batches M in {1, 4, 8} and each schedule (gpipe, 1f1b,
    interleaved: a plan compiled with --virtual-stages 2): 10 AdamW steps;
    every loss and every trained parameter (`partita merge`) within 1e-4 of
    torch.optim.AdamW on the same batches (the step's DP·M·2 sequences whole),
    and every loss within 1e-6 of the same training without a pipeline (TP x
    DP, same M). Interleaved with M not a multiple of PP must be refused
    before any rank starts, saying so, and leave no output folder;
  recompute: --recompute selective and full (1F1B, M = 4) give the losses of
    none within 1e-6;
  inference: the plan compiled without --train (DP replicas taking the
    batches round robin), given M in {1, 4, 8} batches
    at once (pipelined micro-batches; batch j is the export's inputs rolled j
    along the sequence), against `partita run` of the whole model on each
    batch, within 1e-5 of the output's scale.
"""
import csv
import itertools
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

partita, kind, work = sys.argv[1], sys.argv[2], sys.argv[3]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "models"))
import export_models as em  # noqa: E402
from torch_training import Reference  # noqa: E402
from trained_run import Checks  # noqa: E402

em.LAYERS = 8
if kind in ("llama", "hf_llama"):  # 8 query heads sharing 4 key/value heads: tp 4 divides both
    em.HEADS, em.KV_HEADS = 8, 4
STEPS, B, T, LR, WD, SEED = 10, 2, 16, 1e-2, 0.01, 3
MICROS, SCHEDULES = (1, 4, 8), ("gpipe", "1f1b", "interleaved")
if len(sys.argv) > 4:
    layouts = [tuple(int(x) for x in a.split("x")) for a in sys.argv[4:]]
else:
    layouts = [(tp, pp, dp) for pp in (2, 4) for tp in (1, 2, 4) for dp in (1, 2, 4) if tp * pp * dp <= 8]
shutil.rmtree(work, ignore_errors=True)  # this test's own folder
os.makedirs(work)
check = Checks()
fixture = os.path.join(work, kind + ".onnx")
inputs = em.export_static(kind, fixture)
tokens = np.random.default_rng(0).integers(0, em.VOCAB, 4000).astype(np.int64)
token_path = os.path.join(work, "tokens.npy")
np.save(token_path, tokens)


def run(args, expect_ok=True):
    r = subprocess.run([partita] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if expect_ok and r.returncode != 0:
        raise SystemExit(f"FAIL partita {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r


def compile_plan(tag, flags):
    out = os.path.join(work, tag)
    if not os.path.exists(out):
        run(["compile", fixture, "-o", out] + flags)
    return out


def train(plan, ranks, micro, schedule, tag):
    res = os.path.join(work, "res-" + tag)
    run(["launch", "-n", str(ranks), plan, "--steps", str(STEPS), "--data", token_path, "--batch", str(B), "--seq",
         str(T), "--lr", str(LR), "--seed", str(SEED), "--micro-batches", str(micro), "--threads", "1",
         "--schedule", schedule, "--output-dir", res])
    with open(os.path.join(res, "loss.csv")) as f:
        return [float(r["loss"]) for r in csv.DictReader(f)], res


def same_losses(a, b, label):
    err = max(abs(x - y) / abs(y) for x, y in zip(a, b)) if len(a) == len(b) else float("inf")
    check(err <= 1e-6, f"{label}: losses within {err:.1e} (relative) of {len(b)}", quiet=True)
    return err


references = {}  # torch, per global batch


def reference(per_step):
    if per_step not in references:
        references[per_step] = Reference(em.make(kind), tokens, STEPS, per_step, T, SEED, LR, WD)
    return references[per_step]


train_flags = ["--train", "--weight-decay", str(WD)]
flat = {}  # (tp, dp, micro) -> losses without a pipeline
worst = {"torch": 0.0, "flat": 0.0, "recompute": 0.0, "inference": 0.0}
for tp, pp, dp in layouts:
    layout = f"tp{tp}-pp{pp}-dp{dp}"
    ranks = tp * pp * dp
    plans = {"gpipe": compile_plan(layout, train_flags + ["--tp", str(tp), "--pp", str(pp), "--dp", str(dp)]),
             "interleaved": compile_plan(layout + "-v2", train_flags + ["--tp", str(tp), "--pp", str(pp), "--dp",
                                                                        str(dp), "--virtual-stages", "2"])}
    plans["1f1b"] = plans["gpipe"]
    for micro, schedule in itertools.product(MICROS, SCHEDULES):
        label = f"{kind} {layout} M={micro} {schedule}"
        tag = f"{layout}-m{micro}-{schedule}"
        if schedule == "interleaved" and micro % pp:
            r = run(["launch", "-n", str(ranks), plans[schedule], "--steps", str(STEPS), "--data", token_path,
                     "--batch", str(B), "--seq", str(T), "--micro-batches", str(micro), "--schedule", schedule,
                     "--output-dir", os.path.join(work, "res-" + tag)], expect_ok=False)
            check(r.returncode != 0 and f"give a multiple of {pp}" in r.stderr and
                  not os.path.exists(os.path.join(work, "res-" + tag)),
                  f"{label}: refused up front ({r.stderr.strip().splitlines()[-1] if r.stderr else 'no message'})")
            continue
        losses, res = train(plans[schedule], ranks, micro, schedule, tag)
        ref = reference(dp * micro * B)
        n = check.failed
        ref.check_losses(check, losses, 1e-4, label + " ", quiet=True)
        merged = os.path.join(work, f"merged-{tag}.onnx")
        run(["merge", fixture, plans[schedule], res, "-o", merged])
        trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(merged).graph.initializer}
        ref.check_parameters(check, fixture, trained, 1e-4, label + " ", quiet=True)
        worst["torch"] = max(worst["torch"], max(abs(a - b) / abs(b) for a, b in zip(losses, ref.losses)))
        if (tp, dp, micro) not in flat:
            plan = compile_plan(f"tp{tp}-dp{dp}", train_flags + ["--tp", str(tp), "--dp", str(dp)])
            flat[(tp, dp, micro)] = train(plan, tp * dp, micro, "1f1b", f"tp{tp}-dp{dp}-m{micro}")[0]
        worst["flat"] = max(worst["flat"], same_losses(losses, flat[(tp, dp, micro)], label + " vs no pipeline"))
        print(f"{'PASS' if check.failed == n else 'FAIL'} {label}: losses and parameters within 1e-4 of torch, "
              "losses within 1e-6 of no pipeline")
        for f in os.listdir(res):  # keep the folder small: 81 runs per model
            if f.startswith("rank"):
                shutil.rmtree(os.path.join(res, f))
        os.remove(merged)
    # Activation recompute: the same losses (1F1B, 4 micro-batches).
    none, _ = train(plans["1f1b"], ranks, 4, "1f1b", f"{layout}-m4-1f1b-again")
    for mode in ("selective", "full"):
        plan = compile_plan(f"{layout}-{mode}", train_flags + ["--tp", str(tp), "--pp", str(pp), "--dp", str(dp),
                                                               "--recompute", mode])
        losses, _ = train(plan, ranks, 4, "1f1b", f"{layout}-m4-{mode}")
        worst["recompute"] = max(worst["recompute"], same_losses(losses, none, f"{kind} {layout} recompute {mode}"))
    # Inference: pipelined micro-batches, dealt out over the dp replicas,
    # against the single-rank run of each batch.
    plan = compile_plan(layout + "-inference", ["--tp", str(tp), "--pp", str(pp), "--dp", str(dp)])
    for micro in MICROS:
        given = []
        for name, value in inputs.items():
            path = os.path.join(work, f"in.{name}.m{micro}.npy")
            np.save(path, np.concatenate([np.roll(value, j, axis=-1) for j in range(micro)], axis=0))
            given += ["--input", f"{name}={path}"]
        res = os.path.join(work, f"res-{layout}-inference-m{micro}")
        run(["launch", "-n", str(ranks), plan, "--threads", "1", "--output-dir", res] + given)
        for j in range(micro):
            single = os.path.join(work, f"single{j}")
            if not os.path.exists(single):
                batch = []
                for name, value in inputs.items():
                    path = os.path.join(work, f"in.{name}.batch{j}.npy")
                    np.save(path, np.roll(value, j, axis=-1))
                    batch += ["--input", f"{name}={path}"]
                run(["run", fixture, "--threads", "1", "--output-dir", single] + batch)
            for out in sorted(f for f in os.listdir(single) if f.endswith(".npy")):  # every output
                want = np.load(os.path.join(single, out))
                got = np.split(np.load(os.path.join(res, out)), micro, axis=0)[j] \
                    if os.path.exists(os.path.join(res, out)) else None
                err = np.abs(got - want).max() / np.abs(want).max() if got is not None and got.shape == want.shape \
                    else float("inf")
                worst["inference"] = max(worst["inference"], err)
                check(err <= 1e-5, f"{kind} {layout} inference M={micro} batch {j} {out}: {err:.1e} of the output's "
                      "scale", quiet=True)
    print(f"layout {layout} done: {check.passed} passed, {check.failed} failed so far")
print(f"{kind}: largest relative deviation: losses vs torch {worst['torch']:.1e}, vs no pipeline {worst['flat']:.1e}, "
      f"recompute vs none {worst['recompute']:.1e}, inference vs one rank {worst['inference']:.1e}")
sys.exit(check.exit_code(f"check_pipeline_matrix {kind}"))
