"""Writes two tiny LMs (argv[1]: a folder) with a training-mode Dropout after
the embedding, as torch.onnx.export in training mode writes it: drop.onnx
with ratio 0.1, nodrop.onnx with ratio 0 (dropout set to 0 before export)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
for name, ratio in (("drop", 0.1), ("nodrop", 0.0)):
    inits = [numpy_helper.from_array(rng.normal(0, 0.02, (64, 16)).astype(np.float32), "emb.weight"),
             numpy_helper.from_array(rng.normal(0, 0.02, (16, 64)).astype(np.float32), "head.weight"),
             numpy_helper.from_array(np.array(ratio, np.float32), "ratio"),
             numpy_helper.from_array(np.array(True), "training_mode")]
    nodes = [helper.make_node("Gather", ["emb.weight", "ids"], ["h"], name="/emb/Gather"),
             helper.make_node("Dropout", ["h", "ratio", "training_mode"], ["d"], name="/drop/Dropout"),
             helper.make_node("MatMul", ["d", "head.weight"], ["logits"], name="/head/MatMul")]
    g = helper.make_graph(nodes, "lm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 8, 64])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, f"{sys.argv[1]}/{name}.onnx")
