"""compare.py REF.json OUT.npy...: each OUT equals the reference output ONNX
Runtime printed (test/ort/run_model.js: {dims, data}) within 1e-4 of its scale."""
import json
import sys

import numpy as np

ref = json.load(open(sys.argv[1]))
want = np.array(ref["data"], np.float64).reshape(ref["dims"])
for path in sys.argv[2:]:
    got = np.load(path)
    assert got.shape == want.shape, (path, got.shape, want.shape)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err < 1e-4, (path, err)
    print(path, "max rel error", err)
