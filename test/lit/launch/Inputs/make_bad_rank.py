# Overwrites a rank program with a valid ONNX model the runtime cannot load.
import sys
from onnx import TensorProto, helper, save

x = helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 16])
y = helper.make_tensor_value_info("y", TensorProto.INT64, [2, 16])
node = helper.make_node("Hardmax", ["ids"], ["y"], name="y")
save(helper.make_model(helper.make_graph([node], "bad", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]),
     sys.argv[1])
