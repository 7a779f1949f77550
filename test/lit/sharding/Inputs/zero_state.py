"""Reads `partita inspect` of the --zero 0, 1, 2 plans (argv[1:]) and prints
rank 0's optimizer state and its traffic per step beyond --zero 0's, in units
of its parameters' bytes."""
import re
import sys

base = None
for stage, path in enumerate(sys.argv[1:]):
    t = open(path).read()
    p, g, m = map(float, re.search(r"parameters ([0-9.]+) MB, gradients ([0-9.]+) MB, AdamW moments ([0-9.]+) MB",
                                   t).groups())
    comm = float(re.search(r"\n0 +[0-9.]+ +[0-9.]+ +[0-9]+ +([0-9.]+)\n", t).group(1))  # rank 0's MB/step
    base = comm if base is None else base
    print(f"zero {stage}: parameters {p:.3f} MB, gradients {g / p:.2f} x parameters, moments {m / p:.2f} x "
          f"parameters, traffic {(comm - base) / p:+.2f} x parameters beyond zero 0's")
