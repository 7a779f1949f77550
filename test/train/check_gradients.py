#!/usr/bin/python3
"""Loss and gradients of a fixture model against PyTorch autograd.

Partita: canonicalize, add-loss (next-token cross-entropy, ignore_index -100),
autodiff, export, then `partita run` on the training graph. PyTorch: the same
seeded model (models/export_models.py), F.cross_entropy and .backward(). ONNX
initializers are matched to torch parameters by value (torch exports some
weights transposed, under generated names).

Usage: check_gradients.py PARTITA_OPT PARTITA FIXTURE_KIND FIXTURE_NAME WORK_DIR [TP]
With TP, the training graph is compiled for TP tensor-parallel ranks
(`partita compile --emit-gradients --tp TP`) and run under mpirun instead.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

opt, partita, kind, name, work = sys.argv[1:6]
tp = int(sys.argv[6]) if len(sys.argv) > 6 else 0
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "models"))
import export_models as em  # noqa: E402
from torch_params import parameters_of_initializers  # noqa: E402

fixtures = os.path.join(root, "models", "fixtures")
shutil.rmtree(work, ignore_errors=True)  # this test's own folder: Partita replaces only its own outputs
os.makedirs(work)
entry = next(e for e in json.load(open(os.path.join(fixtures, "manifest.json"))) if e["name"] == name)
run = next(r for r in entry["runs"] if r["tag"] == "b2")
inputs = {k: os.path.join(fixtures, f) for k, f in run["inputs"].items()}  # in the model's argument order

model = em.make(kind)
model.train(False)
logits = model(*[torch.from_numpy(np.load(f)) for f in inputs.values()])
ids = np.load(inputs["ids"]) if "ids" in inputs else None
if ids is not None and ids.max() < logits.shape[-1]:  # a language model: next-token labels
    labels = np.concatenate([ids[:, 1:], np.full((ids.shape[0], 1), -100)], axis=1).astype(np.int64)
    labels[0, 3] = -100  # an ignored position inside the sequence
else:  # a classifier (or an encoder's hidden states taken as scores): a class per position
    labels = (np.arange(int(np.prod(logits.shape[:-1]))) * 3 % logits.shape[-1]).reshape(logits.shape[:-1])
    labels = labels.astype(np.int64)
np.save(os.path.join(work, "labels.npy"), labels)
loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), torch.from_numpy(labels).reshape(-1), ignore_index=-100)
loss.backward()
params = {n: (p.detach().numpy(), p.grad.numpy()) for n, p in model.named_parameters() if p.grad is not None}

out = os.path.join(work, "out")
feeds = [*(f"--input={k}={f}" for k, f in inputs.items()), f"--input=labels={os.path.join(work, 'labels.npy')}",
         f"--output-dir={out}"]
if tp:
    compiled = os.path.join(work, f"tp{tp}")
    subprocess.run([partita, "compile", os.path.join(fixtures, name + ".onnx"), "--emit-gradients", "--tp", str(tp),
                    "-o", compiled], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([partita, "launch", "-n", str(tp), compiled, "--threads", "1", *feeds], check=True)
else:
    train = os.path.join(work, "train.onnx")
    subprocess.run([opt, os.path.join(fixtures, name + ".onnx"), "--passes=canonicalize,add-loss,autodiff",
                    f"--emit-onnx={train}"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([partita, "run", train, *feeds], check=True)

failures = 0
ours = float(np.load(os.path.join(out, "loss.npy")))
err = abs(ours - loss.item()) / abs(loss.item())
print(f"loss: partita {ours:.7f} torch {loss.item():.7f} relative error {err:.1e}")
failures += err > 1e-5

checked = 0
initial = {n: p for n, (p, g) in params.items()}
for init_name, matches in parameters_of_initializers(os.path.join(fixtures, name + ".onnx"), initial):
    path = os.path.join(out, f"grad.{init_name}.npy")
    if not os.path.exists(path):
        continue
    # A weight the export shares between parameters gets the sum of their gradients.
    want = sum(params[p][1].T if transposed else params[p][1] for p, transposed in matches)
    pname = "+".join(p for p, _ in matches)
    got = np.load(path)
    # The key bias has an exactly zero gradient (softmax ignores a per-query
    # constant); both sides then hold rounding noise, so errors are relative
    # to the gradient's scale with a floor of 1e-5.
    rel = np.abs(got - want).max() / max(np.abs(want).max(), 1e-5)
    checked += 1
    if rel > 1e-4:
        failures += 1
        print(f"FAIL grad {init_name} ({pname}): relative error {rel:.1e}")
if tp:
    # Every initializer a torch parameter owns is classified trainable (its
    # q/k/v pieces too): the default rule freezes buffers only.
    with open(os.path.join(compiled, "plan.json")) as f:
        classes = json.load(f)["initializers"]
    for init_name, matches in parameters_of_initializers(os.path.join(fixtures, name + ".onnx"), initial):
        mine = [c for c in classes if c["name"] == init_name or c["name"].startswith(init_name + "[")]
        frozen = [c for c in mine if not c["trainable"]]
        if frozen:
            failures += 1
            print(f"FAIL {init_name} ({matches[0][0]}) is a torch parameter but frozen: {frozen[0]['reason']}")
    print(f"classification: {len(classes)} initializers, {sum(not c['trainable'] for c in classes)} frozen")
print(f"gradients checked against torch: {checked}, failures: {failures}")
assert checked >= 10, "too few parameters matched"
print(f"check_gradients: {checked + 1 - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
