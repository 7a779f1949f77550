#!/usr/bin/python3
"""Training and inference give the same bits on `--device cpu-strict` as on `cpu`.

cpu-strict (runtime/core/Device.h, StrictCpuDevice) hands out device addresses the host
cannot touch: runtime code that reads or writes a tensor's bytes outside a kernel or a copy
faults at once, so a run that finishes there moved every byte through the device contract.
This runs the training matrix (tensor, pipeline with GPipe, 1F1B and interleaved 1F1B, data
parallelism with ZeRO 0-3, bf16 and fp16 with loss scaling, recompute, micro-batches,
gradient clipping, a checkpoint saved and resumed) and pipelined inference on both devices
and compares, byte for byte, every loss (loss.csv, as written) and every parameter file and
output the runs write. A difference names the case and the file.

Usage: check_strict_device.py PARTITA SOURCE_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import numpy as np

import same_runs
from same_runs import losses, same_parameters

partita, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
fixtures = os.path.join(source, "models", "fixtures")
GPT = os.path.join(fixtures, "gpt_fused_tied_op17_static.onnx")  # tied: a pipeline shares the embedding
shutil.rmtree(work, ignore_errors=True)  # this test's own folder
os.makedirs(work)
tokens = os.path.join(work, "tokens.npy")
np.save(tokens, np.random.default_rng(0).integers(0, 64, 4000).astype(np.int64))
# Four layers: interleaving puts two model chunks on each of two pipeline ranks.
gpt4 = os.path.join(work, "gpt4.onnx")
subprocess.run(["/usr/bin/python3", os.path.join(source, "models", "export_gpt.py"), "--d", "32", "--heads", "4",
                "--layers", "4", "--vocab", "64", "--seq", "16", "--batch", "2", "-o", gpt4], check=True,
               stdout=subprocess.DEVNULL)

# (name, model, ranks, compile flags, launch flags)
CASES = [
    ("tp2_mb2_clip", GPT, 2, ["--tp", "2"], ["--micro-batches", "2", "--clip-grad-norm", "0.5"]),
    ("dp2_zero0_bf16_mb3", GPT, 2, ["--dp", "2", "--precision", "bf16"], ["--micro-batches", "3"]),
    ("dp2_zero1_fp16_mb2", GPT, 2, ["--dp", "2", "--zero", "1", "--precision", "fp16"],
     ["--micro-batches", "2", "--initial-scale-power", "12"]),
    ("tp2_dp2_zero2_mb2", GPT, 4, ["--tp", "2", "--dp", "2", "--zero", "2"], ["--micro-batches", "2"]),
    ("dp2_zero3_bf16_mb2", GPT, 2, ["--dp", "2", "--zero", "3", "--precision", "bf16"], ["--micro-batches", "2"]),
    ("pp2_gpipe_mb2", GPT, 2, ["--pp", "2"], ["--micro-batches", "2", "--schedule", "gpipe"]),
    ("pp2_tp2_1f1b_fp16_mb4", GPT, 4, ["--pp", "2", "--tp", "2", "--precision", "fp16"],
     ["--micro-batches", "4", "--initial-scale-power", "6", "--loss-scale-window", "1"]),  # the scale doubles each step
    ("pp2_interleaved_mb4", gpt4, 2, ["--pp", "2", "--virtual-stages", "2"],
     ["--micro-batches", "4", "--schedule", "interleaved"]),
    ("tp2_recompute_full_bf16", GPT, 2, ["--tp", "2", "--precision", "bf16", "--recompute", "full"], []),
]
STEPS = 3


def launch(plan, ranks, flags, device, out):
    p = subprocess.run([partita, "launch", "-n", str(ranks), plan, "--threads", "1", "--device", device,
                        "--output-dir", out, *flags], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"{os.path.basename(out)} on {device} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")


def same_files(a, b, case):
    return same_runs.same_files(a, b, case, "cpu", "cpu-strict")


failed = False
for name, model, ranks, cflags, lflags in CASES:
    plan = os.path.join(work, name)
    subprocess.run([partita, "compile", model, "--train", *cflags, "-o", plan], check=True, stdout=subprocess.DEVNULL)
    runs = {}
    for device in ("cpu", "cpu-strict"):
        out = os.path.join(work, f"{name}.{device}")
        launch(plan, ranks, ["--steps", str(STEPS), "--data", tokens, "--batch", "2", "--seq", "16", "--lr", "1e-2",
                             *lflags], device, out)
        runs[device] = out
    a, b = losses(runs["cpu"]), losses(runs["cpu-strict"])
    if a != b or not a:
        sys.exit(f"{name}: losses differ: cpu {a}, cpu-strict {b}")
    files = same_files(runs["cpu"], runs["cpu-strict"], name)
    print(f"{name}: {len(a)} losses and {files} files the same ({a[-1]})")

# A checkpoint saved on cpu-strict resumes there to the same bits as an uninterrupted cpu run.
plan = os.path.join(work, "dp2_zero1_fp16_mb2")
common = ["--data", tokens, "--batch", "2", "--seq", "16", "--lr", "1e-2", "--micro-batches", "2",
          "--initial-scale-power", "12"]
whole = os.path.join(work, "whole.cpu")
launch(plan, 2, ["--steps", "4", *common], "cpu", whole)
first = os.path.join(work, "first.strict")
launch(plan, 2, ["--steps", "2", "--save", os.path.join(work, "ckpt"), *common], "cpu-strict", first)
resumed = os.path.join(work, "resumed.strict")
launch(plan, 2, ["--steps", "4", "--resume", os.path.join(work, "ckpt"), *common], "cpu-strict", resumed)
if losses(whole)[2:] != losses(resumed)[-2:]:
    sys.exit(f"resume on cpu-strict: losses {losses(resumed)}, the uninterrupted cpu run's {losses(whole)}")
same_parameters(whole, resumed, "resume on cpu-strict")
print("resume on cpu-strict: the uninterrupted cpu run's losses and parameters")

# Pipelined inference (sends and receives of activations, outputs gathered on the last stage).
plan = os.path.join(work, "infer_pp2_tp2")
subprocess.run([partita, "compile", GPT, "--pp", "2", "--tp", "2", "-o", plan], check=True, stdout=subprocess.DEVNULL)
ids = os.path.join(fixtures, "gpt_fused_tied_op17_static.b2.in.ids.npy")
outs = {}
for device in ("cpu", "cpu-strict"):
    outs[device] = os.path.join(work, f"infer.{device}")
    launch(plan, 4, ["--input", f"ids={ids}"], device, outs[device])
print(f"inference pp2 tp2: {same_files(outs['cpu'], outs['cpu-strict'], 'inference')} files the same")
print("strict device check: ok")
