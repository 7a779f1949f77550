#!/usr/bin/python3
"""Writes a GPT-shaped ONNX model of any depth/width with its weights in ONNX external data.

    /usr/bin/python3 models/make_gpt_shape.py --layers 96 --d 12288 --heads 96 -o /tmp/gpt96/

The graph is built with onnx.helper in the form torch.onnx.export gives at opset 17 (Gather
embeddings, LayerNormalization, MatMul+Add linears, fused QKV split into heads, causal mask,
tanh GELU written out, an LM head of its own: not tied, also in the sparse file, where both read as
zeros, which compile does not take for a tie). The weights go to one
external data file that is created sparse (truncate to size): it occupies no disk and reads as
zeros, which is enough to measure that the compiler never reads it. With --random SEED the
file holds seeded random weights instead, written one tensor at a time (a model of any size for
end-to-end tests).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=2)
p.add_argument("--d", type=int, default=64)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--vocab", type=int, default=50304)
p.add_argument("--seq", type=int, default=2048)
p.add_argument("--batch", type=int, default=1)
p.add_argument("--random", type=int, metavar="SEED",
               help="write seeded random weights (N(0, 0.02); norm gains near 1) instead of a sparse file")
p.add_argument("-o", "--out", required=True)
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
D, H, T, B = a.d, a.heads, a.seq, a.batch
nodes, inits, layout = [], [], []
offset = 0
DATA = "weights.bin"


def weight(name, shape):
    global offset
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(shape)
    n = int(np.prod(shape)) * 4
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", DATA), ("offset", str(offset)), ("length", str(n))]:
        e = t.external_data.add()
        e.key, e.value = k, v
    layout.append((name, shape))
    offset += n
    inits.append(t)
    return name


def const(name, values, dtype=None):
    arr = np.array(values, dtype=dtype or (np.asarray(values).dtype if np.asarray(values).dtype == bool else np.int64))
    nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
    return name


def node(op, ins, out, **attrs):
    nodes.append(helper.make_node(op, ins, [out], name="/" + out, **attrs))
    return out


def linear(x, name, k, n):
    return node("Add", [node("MatMul", [x, weight(name + ".w", [k, n])], name + "/mm"), weight(name + ".b", [n])], name)


def gelu_tanh(x, p):
    x3 = node("Pow", [x, const(p + "/three", 3.0, np.float32)], p + "/pow")
    inner = node("Add", [x, node("Mul", [x3, const(p + "/c", 0.044715, np.float32)], p + "/mul0")], p + "/add0")
    t = node("Tanh", [node("Mul", [inner, const(p + "/s", 0.7978845608, np.float32)], p + "/mul1")], p + "/tanh")
    half = node("Mul", [x, const(p + "/half", 0.5, np.float32)], p + "/mul2")
    return node("Mul", [half, node("Add", [t, const(p + "/one", 1.0, np.float32)], p + "/add1")], p + "/out")


x = node("Gather", [weight("wte", [a.vocab, D]), "ids"], "emb")
pos = node("Gather", [weight("wpe", [T, D]), const("positions", np.arange(T).reshape(1, T))], "pos")
x = node("Add", [x, pos], "x0")
mask = const("causal", np.triu(np.ones((T, T), dtype=bool), 1))
heads_shape = const("heads_shape", [B, T, H, D // H])
merge_shape = const("merge_shape", [B, T, D])
scale = const("scale", 1.0 / np.sqrt(D // H), np.float32)
neg = const("neg", -np.inf, np.float32)
for i in range(a.layers):
    p = f"h{i}"
    ln = node("LayerNormalization", [x, weight(p + ".ln1.g", [D]), weight(p + ".ln1.b", [D])], p + "/ln1", axis=-1, epsilon=1e-5)
    qkv = linear(ln, p + ".attn", D, 3 * D)
    q, k, v = p + "/q", p + "/k", p + "/v"
    nodes.append(helper.make_node("Split", [qkv, const(p + "/split", [D, D, D])], [q, k, v], axis=2))
    qh = node("Transpose", [node("Reshape", [q, heads_shape], p + "/qr")], p + "/qt", perm=[0, 2, 1, 3])
    kh = node("Transpose", [node("Reshape", [k, heads_shape], p + "/kr")], p + "/kt", perm=[0, 2, 3, 1])
    vh = node("Transpose", [node("Reshape", [v, heads_shape], p + "/vr")], p + "/vt", perm=[0, 2, 1, 3])
    s = node("Mul", [node("MatMul", [qh, kh], p + "/qk"), scale], p + "/scaled")
    s = node("Softmax", [node("Where", [mask, neg, s], p + "/masked")], p + "/probs", axis=-1)
    o = node("Transpose", [node("MatMul", [s, vh], p + "/pv")], p + "/ot", perm=[0, 2, 1, 3])
    o = linear(node("Reshape", [o, merge_shape], p + "/merged"), p + ".proj", D, D)
    x = node("Add", [x, o], p + "/res1")
    ln = node("LayerNormalization", [x, weight(p + ".ln2.g", [D]), weight(p + ".ln2.b", [D])], p + "/ln2", axis=-1, epsilon=1e-5)
    h = gelu_tanh(linear(ln, p + ".fc", D, 4 * D), p + "/gelu")
    x = node("Add", [x, linear(h, p + ".fc2", 4 * D, D)], p + "/res2")
x = node("LayerNormalization", [x, weight("lnf.g", [D]), weight("lnf.b", [D])], "lnf", axis=-1, epsilon=1e-5)
node("MatMul", [x, weight("lm_head", [D, a.vocab])], "logits")

graph = helper.make_graph(nodes, "gpt_shape",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [B, T])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, T, a.vocab])],
                          initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, os.path.join(a.out, "model.onnx"))
with open(os.path.join(a.out, DATA), "wb") as f:
    if a.random is None:
        f.truncate(offset)  # sparse: no weight bytes are written
    else:
        rng = np.random.default_rng(a.random)
        for name, shape in layout:
            w = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
            if name.endswith(".g"):
                w += np.float32(1)
            f.write(w.tobytes())
print(f"{a.out}/model.onnx: {a.layers} layers, d={D}, {offset / 4 / 1e9:.2f}B parameters, "
      f"{len(nodes)} nodes, {offset / 2**30:.1f} GiB {'sparse ' if a.random is None else ''}external data")
