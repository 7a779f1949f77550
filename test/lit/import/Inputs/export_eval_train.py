"""Exports one small model twice (argv[1]: a folder): eval.onnx as
torch.onnx.export writes it by default (eval mode, constant folding), which
merges initializers of equal value: ln2's weight and bias into ln1's, and
fc1's zero bias into ln1's zero bias; and train.onnx in training mode without
folding, which keeps each parameter under its own name."""
import sys
import warnings

import torch

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(64, 16)
        self.ln1, self.ln2 = torch.nn.LayerNorm(16), torch.nn.LayerNorm(16)
        self.fc1, self.fc2 = torch.nn.Linear(16, 16), torch.nn.Linear(16, 64)
        torch.nn.init.zeros_(self.fc1.bias)  # as GPT-2's initialisation does

    def forward(self, ids):
        h = self.ln1(self.emb(ids))
        return self.fc2(self.ln2(h + self.fc1(h)))


m = M().eval()
ids = torch.zeros(2, 8, dtype=torch.long)
kw = dict(input_names=["ids"], output_names=["logits"], opset_version=17)
torch.onnx.export(m, (ids,), f"{sys.argv[1]}/eval.onnx", **kw)
torch.onnx.export(m, (ids,), f"{sys.argv[1]}/train.onnx", training=torch.onnx.TrainingMode.TRAINING,
                  do_constant_folding=False, **kw)
