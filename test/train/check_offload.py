#!/usr/bin/python3
"""Optimizer offload (`launch --offload-optimizer`, DeepSpeed's offload_optimizer {device: cpu})
gives the bits of the same run without it, on `--device cpu-strict`.

Under offload the step programs run on the host's CPU device: the fp32 masters and AdamW's
moments live in host memory, the summed gradients are copied down before each step and the
updated parameters up after it (runtime/train/OptimizerOffload.h). On cpu-strict the device's
memory is apart from the host's, so a gradient or parameter that missed its copy is a fault or
a wrong bit. Each case trains with and without offload and compares, byte for byte, every loss
and every file written; `launch --memory` shows the device holding no optimizer states under
offload. A checkpoint saved under offload resumes, with or without it, to the bits of the
uninterrupted run.

Usage: check_offload.py PARTITA SOURCE_DIR WORK_DIR
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np

import same_runs
from same_runs import losses, same_parameters

partita, source, work = sys.argv[1], sys.argv[2], sys.argv[3]
GPT = os.path.join(source, "models", "fixtures", "gpt_fused_tied_op17_static.onnx")
shutil.rmtree(work, ignore_errors=True)  # this test's own folder
os.makedirs(work)
tokens = os.path.join(work, "tokens.npy")
np.save(tokens, np.random.default_rng(1).integers(0, 64, 4000).astype(np.int64))

# (name, ranks, compile flags, launch flags): dp 2 at ZeRO 1-3 as the issue asks, in each
# precision, and a pipeline (a step program per stage, a tied embedding's two copies).
CASES = [
    ("dp2_zero1_fp16_mb2", 2, ["--dp", "2", "--zero", "1", "--precision", "fp16"],
     ["--micro-batches", "2", "--initial-scale-power", "12"]),
    ("dp2_zero2_bf16_clip", 2, ["--dp", "2", "--zero", "2", "--precision", "bf16"], ["--clip-grad-norm", "0.5"]),
    ("dp2_zero3_mb2", 2, ["--dp", "2", "--zero", "3"], ["--micro-batches", "2"]),
    ("pp2_tp2_1f1b_mb2", 4, ["--pp", "2", "--tp", "2"], ["--micro-batches", "2"]),
]
COMMON = ["--data", tokens, "--batch", "2", "--seq", "16", "--lr", "1e-2", "--threads", "1",
          "--device", "cpu-strict"]


def launch(plan, ranks, flags, out):
    p = subprocess.run([partita, "launch", "-n", str(ranks), plan, *COMMON, "--output-dir", out, *flags],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"{os.path.basename(out)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p.stdout


def same_files(a, b, case):
    return same_runs.same_files(a, b, case, "the run without offload", "the run with it")


def optimizer_states(stdout):
    """The device's optimizer states per rank (launch --memory's lines; not the host's)."""
    return [float(m) for m in re.findall(r"memory of rank \d+ \(measured, MB\):[^\n]*?optimizer states ([0-9.]+)", stdout)]


for name, ranks, cflags, lflags in CASES:
    plan = os.path.join(work, name)
    subprocess.run([partita, "compile", GPT, "--train", *cflags, "-o", plan], check=True, stdout=subprocess.DEVNULL)
    flags = ["--steps", "3", "--memory", *lflags]
    plain = launch(plan, ranks, flags, os.path.join(work, name + ".plain"))
    offload = launch(plan, ranks, flags + ["--offload-optimizer"], os.path.join(work, name + ".offload"))
    a, b = losses(os.path.join(work, name + ".plain")), losses(os.path.join(work, name + ".offload"))
    if a != b or not a:
        sys.exit(f"{name}: losses differ: without offload {a}, with it {b}")
    files = same_files(os.path.join(work, name + ".plain"), os.path.join(work, name + ".offload"), name)
    on, off = optimizer_states(plain), optimizer_states(offload)
    if len(on) != ranks or len(off) != ranks or min(on) <= 0 or max(off) != 0:
        sys.exit(f"{name}: the device's optimizer states (MB per rank) are {on} without offload, {off} with it")
    print(f"{name}: {len(a)} losses and {files} files the same ({a[-1]}); device optimizer states {on[0]} MB -> 0")

# A checkpoint saved under offload (the host's masters and moments) resumes with offload and
# without it to the uninterrupted run's bits.
plan = os.path.join(work, "dp2_zero1_fp16_mb2")
common = ["--micro-batches", "2", "--initial-scale-power", "12"]
whole = os.path.join(work, "whole")
launch(plan, 2, ["--steps", "4", *common], whole)
launch(plan, 2, ["--steps", "2", "--save", os.path.join(work, "ckpt"), "--offload-optimizer", *common],
       os.path.join(work, "first"))
for resume in ([], ["--offload-optimizer"]):
    resumed = os.path.join(work, "resumed" + "".join(resume))
    launch(plan, 2, ["--steps", "4", "--resume", os.path.join(work, "ckpt"), *resume, *common], resumed)
    if losses(whole)[2:] != losses(resumed)[-2:]:
        sys.exit(f"resume {resume}: losses {losses(resumed)}, the uninterrupted run's {losses(whole)}")
    same_parameters(whole, resumed, f"resume {resume}")
    print(f"a checkpoint saved under offload, resumed {'with' if resume else 'without'} it: the uninterrupted run's bits")
print("optimizer offload check: ok")
