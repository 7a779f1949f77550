"""Sets `partita inspect`'s predicted memory lines beside `launch --memory`'s measured ones.

usage: memory_check.py MODEL.onnx PLAN_DIR INSPECT_OUT LAUNCH_OUT [ONE_MICRO_BATCH | OFFLOAD]

Per rank: every category and the peak as predicted and as measured agree
within 5%; the optimizer states are exactly AdamW's two fp32 moments (and
under mixed precision the fp32 master copy) of the rank's share of every
trained parameter, computed here from the model's initializers and the
plan's layouts (its tp shard, and under ZeRO its part of the flat buffer
padded to a multiple of dp: ceil(n / dp)); the parameters are the trained
ones in their bytes (2 under mixed precision; ZeRO-3: the part) plus at most
4 KB of small constants (the fixture's causal mask and shape operands). Prints one
line per rank and a verdict."""
import json
import math
import re
import sys

import onnx

import same_ranks

model, plan_dir, inspect_out, launch_out = sys.argv[1:5]
# With ONE_MICRO_BATCH (a run of one micro-batch at --zero 0 or 1) the gradients are checked too: the
# backward's outputs, 2 or 4 bytes per parameter (at --zero 1 the rank's part of each), nothing summed
# (ZeRO's 2 + 2 + 12 exactly; ZeRO-1 keeps whole sums only over several micro-batches).
one_micro_batch = sys.argv[5:] == ["ONE_MICRO_BATCH"]
# With OFFLOAD (inspect and launch --offload-optimizer, launched on cpu-strict, whose --memory counts
# the device's memory apart from the host's) the device holds no optimizer states: the moments and
# masters are the host's.
offload = sys.argv[5:] == ["OFFLOAD"]
plan = json.load(open(f"{plan_dir}/plan.json"))
mesh = {a["name"]: a["size"] for a in plan["mesh"]}
tp, dp = mesh.get("tp", 1), mesh.get("dp", 1)
zero = plan.get("zero", 0)
shapes = {t.name: list(t.dims) for t in onnx.load(model, load_external_data=False).graph.initializer}
# Mixed precision (plan precision bf16 or fp16) holds the parameters in 2 bytes and keeps a
# float32 master copy beside the moments, partitioned as they are: the ZeRO paper's K = 12.
half = plan.get("precision", "fp32") != "fp32"
moments = params = grads = 0
for p, layout in zip(plan["params"], plan["param_layouts"]):
    n = math.prod(shapes[p]) // (tp if layout.get("tp", "R") != "R" else 1)
    part = math.ceil(n / dp) if zero >= 1 else n
    moments += (3 if half else 2) * 4 * part
    params += (2 if half else 4) * (math.ceil(n / dp) if zero >= 3 else n)
    grads += (2 if half else 4) * part
host_moments = moments
if offload:
    moments = 0

LINE = re.compile(r"memory of rank (\d+) \((predicted|measured), MB\): (.*); peak [0-9.]+ \((\d+) bytes\)")


def read(path, how):
    out, text = {}, open(path).read()
    for m in LINE.finditer(text):
        if m.group(2) == how:
            cats = {k: float(v) * 1e6 for k, v in (c.rsplit(" ", 1) for c in m.group(3).split(", "))}
            out[int(m.group(1))] = (cats, int(m.group(4)))
    return same_ranks.expand(text, out)


predicted, measured = read(inspect_out, "predicted"), read(launch_out, "measured")
ok = sorted(predicted) == sorted(measured) == list(range(plan["world_size"]))
print(f"ranks predicted {sorted(predicted)}, measured {sorted(measured)}")
for r in sorted(set(predicted) & set(measured)):
    (pc, pp), (mc, mp) = predicted[r], measured[r]
    worst, worstName = max((abs(pc[k] - mc[k]) / max(mc[k], 1), k) for k in mc)
    states, held = mc["optimizer states"], mc["parameters"]
    # Parameters: the trained ones by the formula, plus the programs' small constants (a few KB here).
    good = (abs(pp - mp) <= 0.05 * mp and worst <= 0.05 and abs(states - moments) < 1 and
            params <= held + 1 <= params + 4096)
    if one_micro_batch:
        good &= zero <= 1 and abs(mc["gradients"] - grads) < 1
        print(f"rank {r}: gradients {mc['gradients']:.0f} bytes, the formula {grads}")
    ok &= good
    print(f"rank {r}: peak predicted {pp} bytes, measured {mp} ({abs(pp - mp) / mp:.2%}; worst category {worst:.2%}); "
          f"optimizer states {states:.0f} bytes, the formula {moments}; parameters {held:.0f} bytes, the formula "
          f"{params} {'ok' if good else 'WRONG'}")
    if not good:  # what differs, for a failure's log
        print(f"rank {r}: {worstName} predicted {pc[worstName]:.0f} bytes, measured {mc[worstName]:.0f}; predicted "
              f"{predicted[r][0]}, measured {measured[r][0]}")
if offload:  # the moments and masters the device no longer holds are the host's, by the same formula
    HOST = re.compile(r"host of rank (\d+) \(measured, MB\): .*optimizer states ([0-9.]+)")
    host = {int(m.group(1)): float(m.group(2)) * 1e6 for m in HOST.finditer(open(launch_out).read())}
    good = sorted(host) == list(range(plan["world_size"])) and all(abs(b - host_moments) < 1 for b in host.values())
    ok &= good
    print(f"host optimizer states {sorted(set(round(b) for b in host.values()))} bytes, the formula {host_moments} "
          f"{'ok' if good else 'WRONG'}")
print("memory check: " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
