"""check_gpt_init.py WORKDIR: models/export_gpt.py's weights start as GPT-2's do.

Exports a 2-layer byte-level GPT and checks every initializer against GPT-2's
initialisation (Radford et al. 2019; nanoGPT's _init_weights): Linear and
Embedding weights N(0, 0.02), biases 0, LayerNorm 1/0, the residual output
projections (attention c_proj, MLP proj) N(0, 0.02 / sqrt(2 * n_layer)); and
that each parameter is its own initializer (an eval-mode export would merge
the equal norm scales and zero biases into shared tensors)."""
import math
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(work, "gpt.onnx")
layers, d, vocab = 2, 64, 256
subprocess.run([sys.executable, os.path.join(here, "..", "..", "models", "export_gpt.py"), "--vocab", str(vocab),
                "--d", str(d), "--heads", "4", "--layers", str(layers), "--seq", "64", "--batch", "2", "-o", path],
               check=True, stderr=subprocess.DEVNULL)
m = onnx.load(path)
consumer = {}
for node in m.graph.node:
    for i in node.input:
        consumer.setdefault(i, node.name)
inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
# wte, wpe; per layer ln_1 (2), c_attn (w, b), c_proj (w, b), ln_2 (2), fc (w, b), proj (w, b); ln_f (2);
# the head (the tied table, transposed by the exporter).
assert len(inits) == 2 + 12 * layers + 2 + 1, sorted(inits)
residual_std = 0.02 / math.sqrt(2 * layers)
for name, a in inits.items():
    where = consumer.get(name, "")
    if "ln_" in name and name.endswith(".weight"):
        want = ("ones", 1.0)
    elif name.endswith(".bias"):
        want = ("zeros", 0.0)
    elif "/c_proj/" in where or "/proj/" in where:
        want = ("normal", residual_std)
    else:
        want = ("normal", 0.02)
    if want[0] != "normal":
        assert (a == want[1]).all(), (name, a[:4])
        continue
    # The sample std of n normal draws is within a few 1/sqrt(2n) of sigma.
    tol = 5 * want[1] / math.sqrt(2 * a.size)
    assert abs(a.std() - want[1]) < tol and abs(a.mean()) < 5 * want[1] / math.sqrt(a.size), \
        (name, where, a.mean(), a.std(), want[1])
print(f"{len(inits)} initializers as GPT-2 initialises them (residual projections std {residual_std:.4f})")
