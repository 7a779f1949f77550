"""Compares two launch output folders (argv[1], argv[2]): the losses in
loss.csv and every rank's parameter files (.npy), bit for bit; prints what
differs, or 'same: N steps, M arrays'."""
import csv
import os
import sys

import numpy as np

a, b = sys.argv[1], sys.argv[2]
loss = lambda d: [r["loss"] for r in csv.DictReader(open(os.path.join(d, "loss.csv")))]
differ = []
if loss(a) != loss(b):
    differ.append(f"losses {loss(a)} vs {loss(b)}")
arrays = 0
for root, _, files in os.walk(a):
    for f in sorted(files):
        if not f.endswith(".npy"):
            continue
        rel = os.path.relpath(os.path.join(root, f), a)
        other = os.path.join(b, rel)
        if not os.path.exists(other):
            differ.append(f"{rel} missing in {b}")
            continue
        x, y = np.load(os.path.join(a, rel)), np.load(other)
        arrays += 1
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            differ.append(f"{rel} differs")
print("\n".join(differ) if differ else f"same: {len(loss(a))} steps, {arrays} arrays")
