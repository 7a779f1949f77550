# Writes a copy of an ONNX model whose names say nothing: every node becomes
# "n<i>", every tensor (initializers, values; the graph's inputs and outputs
# keep theirs) "t<i>", so no numbered module path ("/h.0/...", "h.0.attn...")
# is left for Partita to find layers by (an exporter other than torch.onnx).
#   strip_names.py IN.onnx OUT.onnx
import sys

import onnx

model = onnx.load(sys.argv[1])
g = model.graph
keep = {v.name for v in list(g.input) + list(g.output)}
names = {}


def rename(name):
    if not name or name in keep:
        return name
    return names.setdefault(name, f"t{len(names)}")


for init in g.initializer:
    init.name = rename(init.name)
for i, node in enumerate(g.node):
    node.name = f"n{i}"
    node.input[:] = [rename(x) for x in node.input]
    node.output[:] = [rename(x) for x in node.output]
for vi in g.value_info:
    vi.name = rename(vi.name)
onnx.save(model, sys.argv[2])
