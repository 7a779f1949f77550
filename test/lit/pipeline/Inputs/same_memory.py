# Compares `partita inspect`'s predicted memory lines with `launch --memory`'s
# measured ones, per rank and category, within 1% (and 64 bytes); and the
# pipeline send copies in flight: measured (their most at once, > 0) at most
# the predicted bound, on every rank.
#   same_memory.py INSPECT_OUTPUT LAUNCH_OUTPUT
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch", "Inputs"))
import same_ranks  # noqa: E402


def lines(path, kind):
    out = {}
    for line in open(path):
        m = re.match(r"memory of rank (\d+) \(" + kind + r", MB\): (.*); peak", line)
        if m:
            out[int(m.group(1))] = {k: float(v) for k, v in re.findall(r"([a-z ]+) ([0-9.]+)", m.group(2))}
    return same_ranks.expand(open(path).read(), out) if kind == "predicted" else out


predicted, measured = lines(sys.argv[1], "predicted"), lines(sys.argv[2], "measured")
bad = []
for rank in sorted(predicted):
    for cat, p in predicted[rank].items():
        got = measured.get(rank, {}).get(cat)
        if got is None or abs(got - p) > max(0.01 * p, 64e-6):
            bad.append(f"rank {rank} {cat.strip()}: predicted {p}, measured {got}")
print(f"ranks predicted {sorted(predicted)}, measured {sorted(measured)}")
print("memory: " + ("same" if not bad and sorted(predicted) == sorted(measured) else "differs: " + "; ".join(bad[:4])))


def copies(path, kind):
    out = {}
    for line in open(path):
        m = re.match(r"pipeline send copies of rank (\d+) \(" + kind + r", MB\): at most ([0-9.]+) in flight", line)
        if m:
            out[int(m.group(1))] = float(m.group(2))
    return same_ranks.expand(open(path).read(), out) if kind == "predicted" else out


bound, most = copies(sys.argv[1], "predicted"), copies(sys.argv[2], "measured")
over = [f"rank {r}: {most.get(r)} MB in flight, bound {b}" for r, b in sorted(bound.items())
        if most.get(r) is None or not 0 < most[r] <= b]
print(f"send copies: {len(bound)} ranks, " + ("within the bound" if bound and not over and
                                               sorted(bound) == sorted(most) else "not: " + "; ".join(over[:4])))
