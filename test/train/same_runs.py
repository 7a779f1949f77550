"""Two launches' outputs compared byte for byte (check_strict_device.py, check_offload.py)."""
import csv
import filecmp
import os
import sys


def losses(out):
    """The losses loss.csv holds, as written."""
    with open(os.path.join(out, "loss.csv")) as f:
        return [row["loss"] for row in csv.DictReader(f)]


def same_files(a, b, case, what_a, what_b):
    """Every file but the timings' (loss.csv's other columns) and checkpoint indexes equal byte
    for byte; the number compared. A difference ends the test naming the case and the file."""
    names = sorted(os.path.relpath(os.path.join(d, f), a) for d, _, fs in os.walk(a) for f in fs)
    other = sorted(os.path.relpath(os.path.join(d, f), b) for d, _, fs in os.walk(b) for f in fs)
    if names != other:
        sys.exit(f"{case}: {what_a} wrote {names}, {what_b} {other}")
    compared = 0
    for n in names:
        if n == "loss.csv" or "checkpoint" in n and n.endswith(".json"):
            continue
        if not filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False):
            sys.exit(f"{case}: {n} differs between {what_a} and {what_b}")
        compared += 1
    return compared


def same_parameters(whole, resumed, case):
    """A resumed run's parameter files (.npy) equal the uninterrupted run's."""
    for d, _, fs in os.walk(whole):
        for f in fs:
            if f.endswith(".npy"):
                rel = os.path.relpath(os.path.join(d, f), whole)
                if not filecmp.cmp(os.path.join(whole, rel), os.path.join(resumed, rel), shallow=False):
                    sys.exit(f"{case}: {rel} differs from the uninterrupted run's")
