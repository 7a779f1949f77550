# Prints whether a merged tiny LM's head equals its embedding's transpose and
# whether training changed the embedding. Usage: check_tied_merge.py IN.onnx MERGED.onnx
import sys
import numpy as np
import onnx
from onnx import numpy_helper

before = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[1]).graph.initializer}
after = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[2]).graph.initializer}
print("head == emb.weight.T:", after["head"].tobytes() == np.ascontiguousarray(after["emb.weight"].T).tobytes())
print("emb.weight changed:", not np.array_equal(before["emb.weight"], after["emb.weight"]))
