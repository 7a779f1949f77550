# Checks a model `partita merge` wrote with external data against an
# independent numpy merge of the trained shards. Usage:
#   check_external_merge.py IN.onnx COMPILED/ TRAINED/ MERGED.onnx
# Prints one line per check; the merged model must keep every initializer of
# 1024 bytes or more in MERGED.onnx.data (location relative), pass
# onnx.checker, hold each trained parameter where plan.json's param_targets
# say (the box of transpose(initializer, perm)), and every other initializer
# bit for bit as the input has it.
import json
import os
import sys
import numpy as np
import onnx
from onnx import numpy_helper

src, compiled, trained, merged = sys.argv[1:5]
plan = json.load(open(os.path.join(compiled, "plan.json")))
before = {t.name: numpy_helper.to_array(t) for t in onnx.load(src).graph.initializer}

raw = onnx.load(merged, load_external_data=False)
location = os.path.basename(merged) + ".data"
ext = [t for t in raw.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
big = [t for t in raw.graph.initializer if int(np.prod(t.dims)) * 4 >= 1024]
print("external:", len(ext) > 0 and {t.name for t in ext} == {t.name for t in big})
print("locations:", sorted({kv.value for t in ext for kv in t.external_data if kv.key == "location"}) == [location])
print("model file small:", os.path.getsize(merged) < 64 * 1024)
onnx.checker.check_model(merged)  # by path: checks the external data too
print("checker: ok")
after = {t.name: numpy_helper.to_array(t) for t in onnx.load(merged).graph.initializer}

# The shards of each parameter: one per tp coordinate (dp replicas hold the same).
ranks = {}
for r in plan["ranks"]:
    ranks.setdefault(r.get("coords", {}).get("tp", 0), r["rank"])
expected = {k: v.copy() for k, v in before.items()}
targeted = set()
for name, targets in zip(plan["params"], plan["param_targets"]):
    shards = [np.load(os.path.join(trained, f"rank{ranks[tp]}", name + ".npy")) for tp in sorted(ranks)]
    full = targets[0]["shape"]
    dims = [d for d in range(len(full)) if shards[0].shape[d] != full[d]]
    value = shards[0] if not dims else np.concatenate(shards, axis=dims[0])
    assert list(value.shape) == full, (name, value.shape, full)
    for t in targets:
        init = t["initializer"]
        targeted.add(init)
        perm = t["perm"] or list(range(value.ndim))
        logical = np.transpose(expected[init], perm).copy()
        start = t.get("start") or [0] * value.ndim
        logical[tuple(slice(s, s + n) for s, n in zip(start, value.shape))] = value
        expected[init] = np.ascontiguousarray(np.transpose(logical, np.argsort(perm)))

print("same initializers:", sorted(after) == sorted(before))
print("trained as the shards:", all(after[k].tobytes() == expected[k].tobytes() for k in targeted))
print("trained moved:", any(not np.array_equal(after[k], before[k]) for k in targeted))
untouched = sorted(set(before) - targeted)
print("untouched bit-identical:", len(untouched), all(after[k].tobytes() == before[k].tobytes() for k in untouched))
