# Rewrites rank 0's program of a compiled plan so that its first by-reference
# initializer points at PATH, and updates the program's SHA-256 in plan.json
# (what a hostile edit of a shared plan folder would do).
# Usage: forge_location.py PLAN_DIR PATH
import hashlib
import json
import os
import sys

import onnx

plan_dir, path = sys.argv[1], sys.argv[2]
prog = os.path.join(plan_dir, "rank0", "forward.onnx")
m = onnx.load(prog, load_external_data=False)
for t in m.graph.initializer:
    locs = [e for e in t.external_data if e.key == "location"]
    if locs and os.path.isabs(locs[0].value):
        locs[0].value = path
        break
onnx.save(m, prog)
with open(os.path.join(plan_dir, "plan.json")) as f:
    plan = json.load(f)
digest = hashlib.sha256(open(prog, "rb").read()).hexdigest()
for r in plan["roles"]:
    if "rank0/forward.onnx" in r["sha256"]:
        r["sha256"]["rank0/forward.onnx"] = digest
with open(os.path.join(plan_dir, "plan.json"), "w") as f:
    json.dump(plan, f, indent=2)
