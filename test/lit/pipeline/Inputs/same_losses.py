# Prints whether two or more loss.csv files (launch's) agree step by step
# within 1e-6 (relative), and the largest difference.
#   same_losses.py A/loss.csv B/loss.csv ...
import csv
import sys

runs = [[float(r["loss"]) for r in csv.DictReader(open(p))] for p in sys.argv[1:]]
worst = max(abs(a - b) / abs(b) for run in runs[1:] for a, b in zip(run, runs[0]))
same = all(len(run) == len(runs[0]) > 0 for run in runs) and worst <= 1e-6
print(f"{len(runs)} runs of {len(runs[0])} steps: {'same losses' if same else 'different losses'} "
      f"(largest relative difference {worst:.1e})")
