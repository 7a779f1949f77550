# Reads a --train --tp 2 --dp 2 plan.json and prints what training-programs.test checks.
import json, sys

plan = json.load(open(sys.argv[1] + "/plan.json"))
io = plan["program_io"]
r0 = plan["roles"][plan["ranks"][0]["role"]]["programs"]
fwd, bwd = io[r0["forward"]], io[r0["backward"]]
saved = plan["schedule"]["saved"]
print("format", plan["format"])
print("schedule", plan["schedule"]["kind"], plan["schedule"]["order"])
print("rank 3 programs", sorted(plan["roles"][plan["ranks"][3]["role"]]["programs"]))
print("forward outputs = loss + saved:", [o["name"] for o in fwd["outputs"]] == ["loss"] + saved)
bwd_inputs = [i["name"] for i in bwd["inputs"]]
print("backward reads every saved activation:", set(saved) <= set(bwd_inputs))
others = [n for n in bwd_inputs if n not in saved]
# The forward's weights the backward reads (value names: trained parameters or frozen initializers).
weights = set(plan["params"]) | {c["name"] for c in plan["initializers"]}
print("backward inputs not saved: only ids and weights:", others[0] == "ids" and set(others[1:]) <= weights)
for name in ["wte.weight", "h.0.ln_1.weight"]:
    i = plan["params"].index(name)
    print(name, "layout", plan["param_layouts"][i], "type", plan["param_types"][i]["shape"])
print("optimizer", plan["optimizer"])
