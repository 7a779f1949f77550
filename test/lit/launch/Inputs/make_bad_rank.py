# Overwrites a rank program with a valid ONNX model the runtime cannot load.
import sys
from onnx import TensorProto, helper, save

x = helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 16])
y = helper.make_tensor_value_info("y", TensorProto.INT64, [2, 16])
node = helper.make_node("Hardmax", ["ids"], ["y"], name="y")
save(helper.make_model(helper.make_graph([node], "bad", [x], [y]), opset_imports=[helper.make_opsetid("", 17)]),
     sys.argv[1])

# The plan records each rank's program hash (a launch refuses a program that is
# not the rank's own); record the new one so that the program reaches the rank
# and fails there, at load.
import hashlib, json, os
rank_dir = os.path.dirname(os.path.abspath(sys.argv[1]))
plan_path = os.path.join(os.path.dirname(rank_dir), "plan.json")
if os.path.exists(plan_path):
    rel = os.path.join(os.path.basename(rank_dir), os.path.basename(sys.argv[1]))
    with open(plan_path) as f:
        plan = json.load(f)
    digest = hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()
    for r in plan["roles"]:
        hashes = r.get("sha256", {})
        if rel in hashes:
            hashes[rel] = digest
    with open(plan_path, "w") as f:
        json.dump(plan, f, indent=2)
