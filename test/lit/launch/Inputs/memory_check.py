"""Sets `partita inspect`'s predicted memory lines beside `launch --memory`'s measured ones.

usage: memory_check.py MODEL.onnx PLAN_DIR INSPECT_OUT LAUNCH_OUT

Per rank: every category and the peak as predicted and as measured agree
within 5%; the optimizer states are exactly AdamW's two fp32 moments of the
rank's share of every trained parameter, computed here from the model's
initializers and the plan's layouts (its tp shard, and under ZeRO its part
of the flat buffer padded to a multiple of dp: ceil(n / dp)). Prints one
line per rank and a verdict."""
import json
import math
import re
import sys

import onnx

model, plan_dir, inspect_out, launch_out = sys.argv[1:5]
plan = json.load(open(f"{plan_dir}/plan.json"))
mesh = {a["name"]: a["size"] for a in plan["mesh"]}
tp, dp = mesh.get("tp", 1), mesh.get("dp", 1)
zero = plan.get("zero", 0)
shapes = {t.name: list(t.dims) for t in onnx.load(model, load_external_data=False).graph.initializer}
moments = 0
for p, layout in zip(plan["params"], plan["param_layouts"]):
    n = math.prod(shapes[p]) // (tp if layout.get("tp", "R") != "R" else 1)
    moments += 2 * 4 * (math.ceil(n / dp) if zero >= 1 else n)

LINE = re.compile(r"memory of rank (\d+) \((predicted|measured), MB\): (.*); peak [0-9.]+ \((\d+) bytes\)")


def read(path, how):
    out = {}
    for m in LINE.finditer(open(path).read()):
        if m.group(2) == how:
            cats = {k: float(v) * 1e6 for k, v in (c.rsplit(" ", 1) for c in m.group(3).split(", "))}
            out[int(m.group(1))] = (cats, int(m.group(4)))
    return out


predicted, measured = read(inspect_out, "predicted"), read(launch_out, "measured")
ok = sorted(predicted) == sorted(measured) == list(range(plan["world_size"]))
print(f"ranks predicted {sorted(predicted)}, measured {sorted(measured)}")
for r in sorted(set(predicted) & set(measured)):
    (pc, pp), (mc, mp) = predicted[r], measured[r]
    worst = max(abs(pc[k] - mc[k]) / max(mc[k], 1) for k in mc)
    states = mc["optimizer states"]
    good = abs(pp - mp) <= 0.05 * mp and worst <= 0.05 and abs(states - moments) < 1
    ok &= good
    print(f"rank {r}: peak predicted {pp} bytes, measured {mp} ({abs(pp - mp) / mp:.2%}; worst category {worst:.2%}); "
          f"optimizer states {states:.0f} bytes, the formula {moments} {'ok' if good else 'WRONG'}")
print("memory check: " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
