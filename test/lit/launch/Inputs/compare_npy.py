# Prints the largest difference between two .npy files relative to the second's
# largest magnitude, and whether it is within TOL (exit status 1 when it is not:
# 'NOT within' also contains the words a check looks for). Usage: compare_npy.py A B TOL
import sys
import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == b.shape, (a.shape, b.shape)
err = float(np.abs(a.astype(np.float64) - b).max() / np.abs(b).max())
ok = err <= float(sys.argv[3])
print(f"relative error {err:.1e}: {'within' if ok else 'NOT within'} {sys.argv[3]}")
sys.exit(0 if ok else 1)
