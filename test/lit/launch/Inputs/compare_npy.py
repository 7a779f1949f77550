# Prints the largest difference between two .npy files relative to the second's
# largest magnitude, and whether it is within TOL. Usage: compare_npy.py A B TOL
import sys
import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == b.shape, (a.shape, b.shape)
err = float(np.abs(a.astype(np.float64) - b).max() / np.abs(b).max())
print(f"relative error {err:.1e}: {'within' if err <= float(sys.argv[3]) else 'NOT within'} {sys.argv[3]}")
