# A GPT-2-style model as nanoGPT and Hugging Face's GPT-2 build it: each
# block's causal mask is a bool buffer (tril of ones, [1, 1, T, T]) sliced to
# the sequence and negated in the graph (`Not`), so the mask is a bool value
# computed at run time, which a pipeline cut may cross. Exported with dynamic
# batch and sequence (the slice stays in the graph); writes MODEL, the token
# ids IDS and torch's logits REF.
#   export_bool_mask_gpt.py MODEL IDS REF
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

D, HEADS, VOCAB, LAYERS, MAX_T = 32, 4, 64, 4, 32


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.register_buffer("bias", torch.tril(torch.ones(MAX_T, MAX_T, dtype=torch.bool)).view(1, 1, MAX_T, MAX_T))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (z.view(b, t, HEADS, D // HEADS).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // HEADS))
        att = att.masked_fill(~self.bias[:, :, :t, :t], float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, D)
        x = x + self.c_proj(y)
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, D), nn.Embedding(MAX_T, D)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t, device=ids.device))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


torch.manual_seed(0)
model = GPT().eval()
ids = torch.randint(0, VOCAB, (2, 16))
torch.onnx.export(model, (ids,), sys.argv[1], input_names=["ids"], output_names=["logits"], opset_version=17,
                  dynamic_axes={"ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}})
np.save(sys.argv[2], ids.numpy())
with torch.no_grad():
    np.save(sys.argv[3], model(ids).numpy())
