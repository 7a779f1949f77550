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
from torch_training import Reference  # noqa: E402
from trained_run import Checks  # noqa: E402

STEPS, B, T, LR, WD, SEED = 10, 2, 16, 1e-2, 0.01, 3
shutil.rmtree(work, ignore_errors=True)  # this test's own folder: Partita replaces only its own outputs
os.makedirs(work)
tokens = np.random.default_rng(0).integers(0, em.VOCAB, 4000).astype(np.int64)
np.save(os.path.join(work, "tokens.npy"), tokens)


def lr_factor(k):
    if k < warmup:
        return (k + 1) / warmup
    if schedule == "constant":
        return 1.0
    p = (k - warmup) / (STEPS - warmup)
    return 1.0 - p if schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * p))


ref = Reference(em.make(kind), tokens, STEPS, dp * micro * B, T, SEED, LR, WD, BETAS, EPS, lr_factor, clip, print)
check = Checks()

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
                "--device", os.environ.get("PARTITA_TEST_DEVICE", "cpu"),  # set per test by test/CMakeLists.txt
                "--output-dir", res], check=True)

with open(os.path.join(res, "loss.csv")) as f:
    ours = [float(r["loss"]) for r in csv.DictReader(f)]
ref.check_losses(check, ours, 1e-4)
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
check(err <= 1e-5, f"merged model in ONNX Runtime vs partita run: relative error {err:.1e}")
trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(merged).graph.initializer}
# Parameters versus buffers: every initializer that is no torch parameter is
# frozen (a rotary table, a mask), no parameter is, and every frozen one comes
# back bit-identical.
with open(os.path.join(compiled, "plan.json")) as f:
    classes = {c["name"]: c for c in json.load(f)["initializers"]}
torch_params = {init_name for init_name, _, _ in match_initializers(fixture, ref.initial)}
for init in onnx.load(fixture).graph.initializer:
    value = numpy_helper.to_array(init)
    c = classes.get(init.name)
    if c is None:  # cut into pieces (fused q/k/v) or folded away: its pieces are checked
        continue
    if value.dtype == np.float32 and value.size >= 2:
        check(c["trainable"] == (init.name in torch_params),
              f"initializer {init.name}: classified {'trainable' if c['trainable'] else 'frozen'} "
              f"({c['reason']}), torch {'trains it' if init.name in torch_params else 'keeps it a buffer'}", quiet=True)
    if not c["trainable"]:
        same = init.name in trained and trained[init.name].dtype == value.dtype and \
            trained[init.name].tobytes() == value.tobytes()
        check(same, f"frozen {init.name} ({c['reason']}): "
              f"{'bit-identical after training' if same else 'changed by training'}")
ref.check_parameters(check, fixture, trained, 1e-4, quiet=True)
code = check.exit_code("check_training")
# At least the step count, the steps' losses, the ONNX Runtime run and 9 parameters compared.
if check.passed < STEPS + 11:
    print(f"FAIL only {check.passed} checks ran: fewer than the {STEPS} losses and the parameters")
    code = 1
sys.exit(code)
