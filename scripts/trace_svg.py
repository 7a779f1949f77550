#!/usr/bin/python3
"""Draws a `partita launch --trace` file as an SVG timeline: one row per rank,
forwards blue, backwards green, on each rank's collectives row pipeline sends and receives grey, the
optimizer step orange; the gaps are the bubble. Standard library only.

    /usr/bin/python3 scripts/trace_svg.py trace.json out.svg [--step N]
"""
import argparse
import json

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("out")
ap.add_argument("--step", type=int, default=2, help="which step to draw (default 2: after set-up)")
a = ap.parse_args()
events = [e for e in json.load(open(a.trace))["traceEvents"] if e["ph"] == "X"]
names = {e["tid"]: e["args"]["name"] for e in json.load(open(a.trace))["traceEvents"] if e["ph"] == "M"}
steps = {e["tid"]: e for e in events if e["name"] == f"step {a.step}"}
if not steps:
    raise SystemExit(f"the trace has no step {a.step}")
t0 = min(e["ts"] for e in steps.values())
t1 = max(e["ts"] + e["dur"] for e in steps.values())
width, row, label = 900, 34, 190
scale = (width - label - 10) / (t1 - t0)
colors = {"forward": "#4a7fd0", "backward": "#3aa260", "send": "#9a9a9a", "receive": "#c8c8c8",
          "optimizer": "#e08a2c", "reduce": "#b06ad0", "AllReduce": "#b06ad0", "ReduceScatter": "#d05a8a",
          "AllGather": "#8a6ad0", "Send": "#9a9a9a", "Recv": "#c8c8c8"}
# Each rank's track, then its collectives' (tid 1000 + rank) when it ran any in the step.
ranks = []
for r in sorted(steps):
    ranks.append(r)
    if any(e["tid"] == 1000 + r and t0 <= e["ts"] <= t1 for e in events):
        ranks.append(1000 + r)
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row * len(ranks) + 40}" '
       f'font-family="sans-serif" font-size="12">',
       f'<rect width="100%" height="100%" fill="white"/>']
for i, r in enumerate(ranks):
    y = 10 + i * row
    out.append(f'<text x="4" y="{y + 18}">{names.get(r, f"rank {r}")}</text>')
    out.append(f'<rect x="{label}" y="{y}" width="{width - label - 10}" height="{row - 8}" fill="#f4f4f4"/>')
    for e in events:
        if e["tid"] != r or e["cat"] == "step" or not (t0 <= e["ts"] <= t1):
            continue
        kind = e["name"].split()[0]
        x, w = label + (e["ts"] - t0) * scale, max(e["dur"] * scale, 0.5)
        out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 8}" fill="{colors.get(kind, "#666")}">'
                   f'<title>{e["name"]} {e["dur"] / 1000:.2f} ms</title></rect>')
        if kind in ("forward", "backward") and w > 14:
            out.append(f'<text x="{x + 2:.1f}" y="{y + 17}" fill="white">{e["name"].split()[-1]}</text>')
y = 10 + len(ranks) * row + 14
legend = ["forward", "backward", "Send", "Recv", "optimizer"]
for i, k in enumerate(legend):
    out.append(f'<rect x="{label + i * 110}" y="{y - 10}" width="12" height="12" fill="{colors[k]}"/>'
               f'<text x="{label + i * 110 + 16}" y="{y}">{k}</text>')
out.append(f'<text x="4" y="{y}">step {a.step}: {(t1 - t0) / 1000:.1f} ms</text>')
out.append("</svg>")
open(a.out, "w").write("\n".join(out))
