#!/usr/bin/python3
"""Exports the fixture GPT (models/export_models.py) at any size, for benchmarks.

    /usr/bin/python3 models/export_gpt.py --d 768 --heads 12 --layers 4 --seq 128 --batch 4 -o gpt.onnx

Writes gpt.onnx (static shapes, opset 17, fused QKV, tied head, tanh GELU) and gpt.ids.npy,
a batch of random token ids.
"""
import argparse

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
# The fixture classes read their sizes from these module globals.
em.VOCAB, em.D, em.HEADS, em.LAYERS, em.SEQ = a.vocab, a.d, a.heads, a.layers, a.seq
torch.manual_seed(0)
model = em.GPT(fused_qkv=True, tied=True).eval()
ids = torch.randint(0, a.vocab, (a.batch, a.seq))
with torch.no_grad():
    torch.onnx.export(model, (ids,), a.out, input_names=["ids"], output_names=["out"], opset_version=17)
np.save(a.out.replace(".onnx", "") + ".ids.npy", ids.numpy())
