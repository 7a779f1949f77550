# Prints how many of a model's initializers training changed (merged model
# against the original). Usage: changed_initializers.py IN.onnx MERGED.onnx
import sys
import numpy as np
import onnx
from onnx import numpy_helper

before = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[1]).graph.initializer}
after = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[2]).graph.initializer}
changed = [n for n in before if n in after and not np.array_equal(before[n], after[n])]
print(f"changed: {len(changed)} of {len(before)}")
