#!/usr/bin/python3
"""Ten AdamW steps of Partita against torch.optim.AdamW on the same batches.

Partita: `partita compile --train [--tp T]`, `partita launch --steps 10`. PyTorch:
the same seeded fixture model (its initial weights are the fixture's
initializers), F.cross_entropy, torch.optim.AdamW with the same hyper-parameters,
the same batches (the splitmix64 sampler of tools/LaunchCommand.cpp). Checks the
loss of every step and every final parameter within 1e-4 relative.

FIXTURE_NAME @export builds the fixture at test time (export_models.export_static).
Also checks the classification of initializers: torch's parameters trainable,
everything else frozen and bit-identical after training (`partita merge`).

Usage: check_training.py PARTITA FIXTURE_KIND FIXTURE_NAME WORK_DIR TP [DP [MICRO_BATCHES [SCHEDULE WARMUP CLIP
       [COMPILE_FLAG...]]]]  (e.g. --sequence-parallel)
A step's global batch is DP x MICRO_BATCHES x 2 sequences; PyTorch takes it whole.
SCHEDULE (constant/linear/cosine) with WARMUP steps maps to torch's LambdaLR, CLIP to
torch.nn.utils.clip_grad_norm_.
"""
import math
import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

partita, kind, name, work, tp = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
dp = int(sys.argv[6]) if len(sys.argv) > 6 else 1
micro = int(sys.argv[7]) if len(sys.argv) > 7 else 1
schedule = sys.argv[8] if len(sys.argv) > 8 else "constant"
warmup = int(sys.argv[9]) if len(sys.argv) > 9 else 0
clip = float(sys.argv[10]) if len(sys.argv) > 10 else 0.0
compile_flags = sys.argv[11:]


def flag(name, default):
    """A compile flag's value (`--name V`), for torch's side of the comparison."""
    return float(compile_flags[compile_flags.index(name) + 1]) if name in compile_flags else default


BETAS, EPS = (flag("--adam-beta1", 0.9), flag("--adam-beta2", 0.999)), flag("--adam-eps", 1e-8)
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "models"))
import export_models as em  # noqa: E402
from torch_params import match_initializers  # noqa: E402

STEPS, B, T, LR, WD, SEED = 10, 2, 16, 1e-2, 0.01, 3
shutil.rmtree(work, ignore_errors=True)  # this test's own folder: Partita replaces only its own outputs
os.makedirs(work)
tokens = np.random.default_rng(0).integers(0, em.VOCAB, 4000).astype(np.int64)
np.save(os.path.join(work, "tokens.npy"), tokens)
MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def batch(step):
    ids, labels = [], []
    per_step = dp * micro * B
    for j in range((step - 1) * per_step, step * per_step):
        off = splitmix64((SEED * 1000003 + j) & MASK) % (len(tokens) - T - 1)
        ids.append(tokens[off:off + T])
        labels.append(tokens[off + 1:off + T + 1])
    return torch.from_numpy(np.stack(ids)), torch.from_numpy(np.stack(labels))


model = em.make(kind)
opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)


def lr_factor(k):
    if k < warmup:
        return (k + 1) / warmup
    if schedule == "constant":
        return 1.0
    p = (k - warmup) / (STEPS - warmup)
    return 1.0 - p if schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * p))


sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
initial = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
max_grad = {n: np.zeros_like(p) for n, p in initial.items()}  # per element, over the steps
has_grad = set()
torch_losses = []
for step in range(1, STEPS + 1):
    ids, labels = batch(step)
    logits = model(ids)
    if isinstance(logits, tuple):  # the logits first, then other outputs (BERT's pooler)
        logits = logits[0]
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    opt.zero_grad()
    loss.backward()
    for n, p in model.named_parameters():
        if p.grad is not None:  # None: the loss does not depend on it (a pooler beside an LM loss)
            max_grad[n] = np.maximum(max_grad[n], p.grad.abs().numpy())
            has_grad.add(n)
    if clip > 0:
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
        print(f"step {step}: gradient norm {norm:.4f} (clipped to {clip})" if norm > clip else
              f"step {step}: gradient norm {norm:.4f} (not clipped)")
    opt.step()
    sched.step()
    torch_losses.append(loss.item())

compiled, res = os.path.join(work, f"tp{tp}"), os.path.join(work, f"res{tp}")
if name == "@export":
    # Built here (models/export_models.py export_static): folded buffers as initializers.
    fixture = os.path.join(work, kind + ".onnx")
    run_inputs = []
    for n, v in em.export_static(kind, fixture).items():
        np.save(os.path.join(work, f"in.{n}.npy"), v)
        run_inputs.append(f"{n}={os.path.join(work, f'in.{n}.npy')}")
else:
    fixture = os.path.join(root, "models", "fixtures", name + ".onnx")
    run_inputs = [f"ids={os.path.join(root, 'models', 'fixtures', name + '.b2.in.ids.npy')}"]
subprocess.run([partita, "compile", fixture, "--train",
                "--tp", str(tp), "--dp", str(dp), "--weight-decay", str(WD), "--bucket-mb", "0.01", *compile_flags,
                "-o", compiled], check=True,
               stdout=subprocess.DEVNULL)
# A pipeline (--pp P among the compile flags) has P times the ranks.
pp = int(compile_flags[compile_flags.index("--pp") + 1]) if "--pp" in compile_flags else 1
subprocess.run([partita, "launch", "-n", str(tp * dp * pp), compiled, "--steps", str(STEPS), "--data",
                os.path.join(work, "tokens.npy"), "--batch", str(B), "--seq", str(T), "--lr", str(LR),
                "--seed", str(SEED), "--micro-batches", str(micro), "--threads", "1",
                "--lr-schedule", schedule, "--warmup-steps", str(warmup), "--clip-grad-norm", str(clip),
                "--output-dir", res], check=True)

passed = failed = 0
with open(os.path.join(res, "loss.csv")) as f:
    ours = [float(r["loss"]) for r in csv.DictReader(f)]
for step, (a, b) in enumerate(zip(ours, torch_losses), 1):
    err = abs(a - b) / abs(b)
    ok = err <= 1e-4 and len(ours) == STEPS
    passed, failed = passed + ok, failed + (not ok)
    print(f"{'PASS' if ok else 'FAIL'} step {step}: loss partita {a:.6f} torch {b:.6f} (relative error {err:.1e})")

final = {n: p.detach().numpy() for n, p in model.named_parameters()}
# `partita merge` writes the trained shards back into one ONNX model.
merged = os.path.join(work, f"merged{tp}.onnx")
subprocess.run([partita, "merge", fixture, compiled, res, "-o", merged], check=True, stdout=subprocess.DEVNULL)
onnx.checker.check_model(onnx.load(merged), full_check=True)
subprocess.run([partita, "run", merged, *[f"--input={i}" for i in run_inputs],
                f"--output-dir={os.path.join(work, 'merged-run')}"], check=True)
# ... which ONNX Runtime loads and runs as Partita's runtime does (the
# parameters themselves are compared with torch below).
ort_run = subprocess.run(["node", os.path.join(root, "test", "ort", "run_model.js"), merged, *run_inputs],
                         check=True, capture_output=True, text=True)
ort_out = np.array(json.loads(ort_run.stdout)["data"], dtype=np.float64)
ours_out = np.load(os.path.join(work, "merged-run", "out.npy")).astype(np.float64).ravel()
err = np.abs(ort_out - ours_out).max() / np.abs(ours_out).max()
ok = err <= 1e-5
passed, failed = passed + ok, failed + (not ok)
print(f"{'PASS' if ok else 'FAIL'} merged model in ONNX Runtime vs partita run: relative error {err:.1e}")
trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(merged).graph.initializer}
# Parameters versus buffers: every initializer that is no torch parameter is
# frozen (a rotary table, a mask), no parameter is, and every frozen one comes
# back bit-identical.
with open(os.path.join(compiled, "plan.json")) as f:
    classes = {c["name"]: c for c in json.load(f)["initializers"]}
torch_params = {init_name for init_name, _, _ in match_initializers(fixture, initial)}
for init in onnx.load(fixture).graph.initializer:
    value = numpy_helper.to_array(init)
    c = classes.get(init.name)
    if c is None:  # cut into pieces (fused q/k/v) or folded away: its pieces are checked
        continue
    if value.dtype == np.float32 and value.size >= 2:
        ok = c["trainable"] == (init.name in torch_params)
        passed, failed = passed + ok, failed + (not ok)
        if not ok:
            print(f"FAIL initializer {init.name}: classified {'trainable' if c['trainable'] else 'frozen'} "
                  f"({c['reason']}), torch {'trains it' if init.name in torch_params else 'keeps it a buffer'}")
    if not c["trainable"]:
        same = init.name in trained and trained[init.name].dtype == value.dtype and \
            trained[init.name].tobytes() == value.tobytes()
        passed, failed = passed + same, failed + (not same)
        print(f"{'PASS' if same else 'FAIL'} frozen {init.name} ({c['reason']}): "
              f"{'bit-identical after training' if same else 'changed by training'}")
for init_name, pname, transposed in match_initializers(fixture, initial):
    if init_name not in trained:
        continue
    ours, want = trained[init_name], final[pname].T if transposed else final[pname]
    if pname not in has_grad:  # torch's AdamW skips it: unchanged, bit for bit
        same = ours.tobytes() == (initial[pname].T if transposed else initial[pname]).astype(ours.dtype).tobytes()
        passed, failed = passed + same, failed + (not same)
        print(f"{'PASS' if same else 'FAIL'} {init_name}: the loss does not depend on it; "
              f"{'unchanged' if same else 'changed by training'}")
        continue
    # Elements whose gradient is zero in exact arithmetic (softmax ignores the
    # key bias, also the key third of a fused q/k/v bias): AdamW normalises
    # rounding noise, on both sides, into full-size steps. Left out.
    counted = (max_grad[pname].T if transposed else max_grad[pname]) >= 1e-6
    if not counted.any():
        print(f"skip {init_name}: its gradient is zero in exact arithmetic (max |g| {max_grad[pname].max():.1e})")
        continue
    if not counted.all():
        print(f"{init_name}: {int((~counted).sum())} of {counted.size} elements have a zero gradient "
              "in exact arithmetic: left out")
    ours, want = ours[counted], want[counted]
    err = np.linalg.norm(ours - want) / np.linalg.norm(want)  # relative Frobenius error
    ok = err <= 1e-4
    passed, failed = passed + ok, failed + (not ok)
    if not ok:
        print(f"FAIL parameter {init_name}: relative error {err:.1e}")
print(f"check_training: {passed} passed, {failed} failed")
sys.exit(1 if failed or passed < STEPS + 10 else 0)
