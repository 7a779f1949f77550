# Writes three tiny LMs (ids [2,8] -> Gather(E) -> LayerNorm -> MatMul(head) -> logits):
#   tied.onnx       head is a separate initializer equal to E's transpose (torch.onnx's tied head)
#   near.onnx       the same, one element of the head changed by one ulp (not tied)
#   transpose.onnx  head is Transpose(E) in the graph (an export without constant folding)
#   zeros.onnx      E and the head all zeros (equal, but no evidence of a tie)
# Usage: make_tied.py DIR
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)
E = rng.normal(0, 0.02, (64, 16)).astype(np.float32)


def model(name, head, transpose_node=False, table=E):
    inits = [numpy_helper.from_array(table, "emb.weight"),
             numpy_helper.from_array(np.ones(16, np.float32), "ln.weight"),
             numpy_helper.from_array(np.zeros(16, np.float32), "ln.bias")]
    nodes = [helper.make_node("Gather", ["emb.weight", "ids"], ["h"]),
             helper.make_node("LayerNormalization", ["h", "ln.weight", "ln.bias"], ["n"], axis=-1)]
    if transpose_node:
        nodes.append(helper.make_node("Transpose", ["emb.weight"], ["head"], perm=[1, 0]))
    else:
        inits.append(numpy_helper.from_array(head, "head"))
    nodes.append(helper.make_node("MatMul", ["n", "head"], ["logits"]))
    g = helper.make_graph(nodes, "tiny_lm", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 8, 64])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{name}.onnx")


model("tied", E.T.copy())
near = E.T.copy()
near[5, 40] = np.nextafter(near[5, 40], np.float32(1))
model("near", near)
model("transpose", None, transpose_node=True)
model("zeros", np.zeros((16, 64), np.float32), table=np.zeros_like(E))
np.save(f"{out}/tokens.npy", rng.integers(0, 64, 500))
