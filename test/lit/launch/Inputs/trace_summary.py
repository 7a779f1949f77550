"""Summarises a launch --trace file: its tracks, the slices each track has in
step 2 (names, once each), and whether every slice of a step lies within it."""
import json
import sys

trace = json.load(open(sys.argv[1]))["traceEvents"]
tracks = {e["tid"]: e["args"]["name"] for e in trace if e["ph"] == "M"}
print("tracks: " + "; ".join(tracks[t] for t in sorted(tracks, key=lambda t: (t % 1000, t))))
slices = [e for e in trace if e["ph"] == "X"]
steps = {e["tid"]: e for e in slices if e["name"] == "step 2"}
inside = True
for tid in sorted(tracks, key=lambda t: (t % 1000, t)):
    step = steps[tid % 1000]
    start, end = step["ts"], step["ts"] + step["dur"]
    mine = [e for e in slices if e["tid"] == tid and start <= e["ts"] <= end]
    inside &= all(e["ts"] + e["dur"] <= end + 1 for e in mine)
    names = sorted({e["name"] if e["name"] != "step 2" else "step" for e in mine})
    if tid in (0, 1000, 1) and names:
        print(f"{tracks[tid].split(' (')[0] + (' collectives' if tid >= 1000 else '')}: {', '.join(names)}")
print(f"every slice of a step within it: {inside}")
