"""Reads `partita inspect` of the --zero 0, 1, 2, 3 plans (argv[1:]) and prints
rank 0's parameters, optimizer state and its traffic per step beyond --zero
0's, in units of its parameters' bytes at --zero 0."""
import re
import sys

base = base_p = None
for stage, path in enumerate(sys.argv[1:]):
    t = open(path).read()
    p, g, m = map(float, re.search(r"parameters ([0-9.]+) MB, gradients ([0-9.]+) MB, AdamW moments ([0-9.]+) MB",
                                   t).groups())
    comm = float(re.search(r"\n0 +[0-9.]+ +[0-9.]+ +[0-9]+ +([0-9.]+)\n", t).group(1))  # rank 0's MB/step
    base = comm if base is None else base
    base_p = p if base_p is None else base_p
    print(f"zero {stage}: parameters {p / base_p:.2f} x, gradients {g / base_p:.2f} x, moments {m / base_p:.2f} x "
          f"zero 0's parameters ({base_p:.3f} MB), traffic {(comm - base) / base_p:+.2f} x beyond zero 0's")
