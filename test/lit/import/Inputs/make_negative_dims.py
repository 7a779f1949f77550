"""Writes ONNX models with negative sizes into the folder given as argv[1]:
input-neg.onnx (input x: float[2,-3]), init-neg.onnx (initializer w with dims
[-2,3]) and const-neg.onnx (a Constant whose value tensor has dims [-1,2]).
The ONNX text syntax cannot spell these, so they are built with onnx.helper."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, name))


vi = helper.make_tensor_value_info
save("input-neg.onnx", [helper.make_node("Relu", ["x"], ["y"])],
     [vi("x", TensorProto.FLOAT, [2, -3])], [vi("y", TensorProto.FLOAT, [2, -3])])

w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-2, 3])
save("init-neg.onnx", [helper.make_node("Add", ["x", "w"], ["y"])],
     [vi("x", TensorProto.FLOAT, [2, 3])], [vi("y", TensorProto.FLOAT, [2, 3])], [w])

c = TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[-1, 2])
save("const-neg.onnx", [helper.make_node("Constant", [], ["c"], value=c), helper.make_node("Add", ["x", "c"], ["y"])],
     [vi("x", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, [2])])
