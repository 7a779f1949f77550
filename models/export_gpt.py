#!/usr/bin/python3
"""Exports the fixture GPT (models/export_models.py) at any size, for benchmarks.

    /usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 -o gpt.onnx

Writes gpt.onnx (static shapes, opset 17, fused QKV, tied head, tanh GELU) and gpt.ids.npy,
a batch of random token ids. Weights start as GPT-2's do (gpt2_init), so an untrained model
predicts nearly uniformly: its first loss is close to ln(vocab).
"""
import argparse
import math

import numpy as np
import torch

import export_models as em

p = argparse.ArgumentParser()
p.add_argument("--d", type=int, default=768)
p.add_argument("--heads", type=int, default=12)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--seq", type=int, default=128)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--vocab", type=int, default=256)  # byte-level tokens
p.add_argument("-o", "--out", required=True)
a = p.parse_args()


def gpt2_init(model, layers):
    """GPT-2's initialisation (and nanoGPT's): Linear and Embedding weights N(0, 0.02), biases 0,
    LayerNorm scale 1 and bias 0; the projections that write into the residual stream (attention
    c_proj, MLP proj) N(0, 0.02 / sqrt(2 * layers)), so the residual sum's variance does not grow
    with depth. The tied head is the embedding table, initialised once as an Embedding."""
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            residual = name.endswith(".c_proj") or name.endswith(".proj")
            if m.weight is not model.wte.weight:
                torch.nn.init.normal_(m.weight, 0.0, 0.02 / math.sqrt(2 * layers) if residual else 0.02)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
        elif isinstance(m, torch.nn.Embedding):
            torch.nn.init.normal_(m.weight, 0.0, 0.02)
        elif isinstance(m, (torch.nn.LayerNorm, em.LayerNorm)):
            torch.nn.init.ones_(m.weight)
            torch.nn.init.zeros_(m.bias)


# The fixture classes read their sizes from these module globals.
em.VOCAB, em.D, em.HEADS, em.LAYERS, em.SEQ = a.vocab, a.d, a.heads, a.layers, a.seq
torch.manual_seed(0)
model = em.GPT(fused_qkv=True, tied=True).eval()
with torch.no_grad():
    gpt2_init(model, a.layers)
ids = torch.randint(0, a.vocab, (a.batch, a.seq))
# An eval-mode export merges initializers of equal value: every LayerNorm scale (all ones) and
# every zero bias of a shape would become one shared tensor, so training would tie them. Each
# parameter keeps its own initializer (the tied head is one tensor anyway).
torch._C._jit_pass_onnx_deduplicate_initializers = lambda graph, params, is_train: params
with torch.no_grad():
    torch.onnx.export(model, (ids,), a.out, input_names=["ids"], output_names=["out"], opset_version=17)
np.save(a.out.replace(".onnx", "") + ".ids.npy", ids.numpy())
# Named as the fixtures are (test/e2e/tensor_parallel.sh reads them): the ids
# and PyTorch's output for them.
if a.batch == 2:
    with torch.no_grad():
        ref = model(ids)
    np.save(a.out.replace(".onnx", "") + ".b2.in.ids.npy", ids.numpy())
    np.save(a.out.replace(".onnx", "") + ".b2.ref.out.npy", (ref[0] if isinstance(ref, tuple) else ref).numpy())
