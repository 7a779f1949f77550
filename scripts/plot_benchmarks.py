#!/usr/bin/python3
"""Draws the benchmark figures of docs/benchmarks.md as SVG charts, from the
numbers kept in docs/bench-data/figures.json (the figures the README states;
nothing is measured here). Standard library only.

    /usr/bin/python3 scripts/plot_benchmarks.py [--data FILE] [--out DIR]

Writes DIR/collectives-busbw.svg, pipeline-bubble.svg, zero-peak-rss.svg,
zero-step-time.svg, memory-by-category.svg and mixed-precision.svg (DIR:
docs/img). A figure the README gives as a range [low, high] is drawn as a
band or a whisker from low to high.
"""
import argparse
import json
import math
import os
from xml.sax.saxutils import escape

W, H = 640, 400
FONT = 'font-family="sans-serif" font-size="12"'
COLORS = {"all_reduce": "#2f6bbd", "reduce_scatter": "#d0562a", "all_gather": "#2e9a52"}
HALO = 'stroke="white" stroke-width="3" paint-order="stroke"'  # keeps a label readable over a line
PALETTE = ["#9bb4d6", "#2f6bbd", "#d0562a", "#2e9a52", "#8a5fc0", "#c9a227", "#7a7a7a"]


def fmt2(v):
    """A ratio as the README writes it: two decimals (a range: low-high)."""
    if isinstance(v, (list, tuple)):
        return f"{v[0]:.2f}-{v[1]:.2f}"
    return f"{v:.2f}"


def fmt(v):
    """A number as a tick or value label: no trailing zeros."""
    if isinstance(v, (list, tuple)):
        return f"{fmt(v[0])}-{fmt(v[1])}"
    s = f"{v:.3f}".rstrip("0").rstrip(".")
    return s if s != "-0" else "0"


def nice_ticks(lo, hi, n=5):
    """Round tick values covering [lo, hi]."""
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks, t = [], first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    if ticks[-1] < hi - step * 1e-9:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


class Chart:
    """One SVG: a title, a plot area with axes, and a legend (right or top)."""

    def __init__(self, title, xlabel, ylabel, legend="right", legend_rows=1):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.left, self.top = 68, 44
        self.right = 452 if legend == "right" else W - 18
        if legend == "top":
            self.top += 20 * legend_rows
        self.bottom = H - 58
        self.legend_pos = legend
        self.body, self.legend = [], []

    # Plot-area geometry; set_x/set_y choose the scales.
    def set_y(self, lo, hi, ticks):
        self.ylo, self.yhi, self.yticks = lo, max(hi, ticks[-1]), ticks

    def y(self, v):
        return self.bottom - (v - self.ylo) / (self.yhi - self.ylo) * (self.bottom - self.top)

    def set_x(self, lo, hi, ticks, log=False, labels=None):
        self.xlo, self.xhi, self.xticks, self.xlog, self.xlabels = lo, hi, ticks, log, labels

    def x(self, v):
        f = (lambda t: math.log2(t)) if self.xlog else (lambda t: t)
        return self.left + (f(v) - f(self.xlo)) / (f(self.xhi) - f(self.xlo)) * (self.right - self.left)

    def add(self, element):
        self.body.append(element)

    def key(self, label, color, kind="line", dash=None, marker="circle"):
        self.legend.append((label, color, kind, dash, marker))

    def axes(self, categories=None):
        out = []
        for t in self.yticks:
            yy = self.y(t)
            out.append(f'<line x1="{self.left}" y1="{yy:.1f}" x2="{self.right}" y2="{yy:.1f}" stroke="#e4e4e4"/>')
            out.append(f'<text x="{self.left - 6}" y="{yy + 4:.1f}" text-anchor="end">{fmt(t)}</text>')
        if categories is None:
            for t, lab in zip(self.xticks, self.xlabels or [fmt(t) for t in self.xticks]):
                xx = self.x(t)
                out.append(f'<line x1="{xx:.1f}" y1="{self.bottom}" x2="{xx:.1f}" y2="{self.bottom + 5}" stroke="#333"/>')
                out.append(f'<text x="{xx:.1f}" y="{self.bottom + 18}" text-anchor="middle">{escape(lab)}</text>')
        else:
            for xx, lab in categories:
                for i, part in enumerate(lab.split("\n")):
                    out.append(f'<text x="{xx:.1f}" y="{self.bottom + 17 + 13 * i}" text-anchor="middle">'
                               f'{escape(part)}</text>')
        out.append(f'<line x1="{self.left}" y1="{self.bottom}" x2="{self.right}" y2="{self.bottom}" stroke="#333"/>')
        out.append(f'<line x1="{self.left}" y1="{self.top}" x2="{self.left}" y2="{self.bottom}" stroke="#333"/>')
        xl_y = H - 12
        out.append(f'<text x="{(self.left + self.right) / 2:.1f}" y="{xl_y}" text-anchor="middle">'
                   f'{escape(self.xlabel)}</text>')
        cy = (self.top + self.bottom) / 2
        out.append(f'<text x="16" y="{cy:.1f}" text-anchor="middle" transform="rotate(-90 16 {cy:.1f})">'
                   f'{escape(self.ylabel)}</text>')
        return out

    def legend_svg(self):
        out = []
        if self.legend_pos == "right":
            x0, yy = self.right + 12, self.top + 4
            for label, color, kind, dash, marker in self.legend:
                out += self.swatch(x0, yy, color, kind, dash, marker)
                lines = wrap(label, 22)
                for j, part in enumerate(lines):
                    out.append(f'<text x="{x0 + 30}" y="{yy + 4 + 14 * j}" font-size="11">{escape(part)}</text>')
                yy += 14 * len(lines) + 10
        else:
            xx, yy = self.left, 40
            for label, color, kind, dash, marker in self.legend:
                width = 34 + 6.6 * len(label) + 14
                if xx + width > W - 10:
                    xx, yy = self.left, yy + 20
                out += self.swatch(xx, yy, color, kind, dash, marker)
                out.append(f'<text x="{xx + 30}" y="{yy + 4}">{escape(label)}</text>')
                xx += width
        return out

    @staticmethod
    def swatch(x0, yy, color, kind, dash, marker):
        if kind == "bar":
            return [f'<rect x="{x0}" y="{yy - 6}" width="22" height="12" fill="{color}"/>']
        if kind == "whisker":
            x = x0 + 11
            return [f'<line x1="{x}" y1="{yy - 7}" x2="{x}" y2="{yy + 7}" stroke="{color}" stroke-width="2"/>',
                    f'<line x1="{x - 5}" y1="{yy - 7}" x2="{x + 5}" y2="{yy - 7}" stroke="{color}" stroke-width="2"/>',
                    f'<line x1="{x - 5}" y1="{yy + 7}" x2="{x + 5}" y2="{yy + 7}" stroke="{color}" stroke-width="2"/>']
        if kind == "band":
            return [f'<rect x="{x0}" y="{yy - 6}" width="22" height="12" fill="{color}" fill-opacity="0.3" '
                    f'stroke="{color}"/>']
        d = f' stroke-dasharray="{dash}"' if dash else ""
        out = [f'<line x1="{x0}" y1="{yy}" x2="{x0 + 22}" y2="{yy}" stroke="{color}" stroke-width="2"{d}/>']
        if marker:
            out.append(point(x0 + 11, yy, color, marker))
        return out

    def write(self, path, categories=None):
        svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" {FONT}>',
               f'<title>{escape(self.title)}</title>',
               '<rect width="100%" height="100%" fill="white"/>',
               f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
               f'{escape(self.title)}</text>']
        svg += self.axes(categories)
        svg += self.body
        svg += self.legend_svg()
        svg.append("</svg>")
        with open(path, "w") as f:
            f.write("\n".join(svg) + "\n")


def wrap(text, width):
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}".strip()
    return lines + [cur] if cur else lines


def point(x, y, color, marker):
    if marker == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="white" stroke="{color}" stroke-width="2"/>'
    if marker == "diamond":
        return (f'<polygon points="{x:.1f},{y - 5:.1f} {x + 5:.1f},{y:.1f} {x:.1f},{y + 5:.1f} {x - 5:.1f},{y:.1f}" '
                f'fill="{color}"/>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}"/>'


def whisker(c, x, lo, hi, color):
    y1, y2 = c.y(lo), c.y(hi)
    return [f'<line x1="{x:.1f}" y1="{y1:.1f}" x2="{x:.1f}" y2="{y2:.1f}" stroke="{color}" stroke-width="2"/>',
            f'<line x1="{x - 5:.1f}" y1="{y1:.1f}" x2="{x + 5:.1f}" y2="{y1:.1f}" stroke="{color}" stroke-width="2"/>',
            f'<line x1="{x - 5:.1f}" y1="{y2:.1f}" x2="{x + 5:.1f}" y2="{y2:.1f}" stroke="{color}" stroke-width="2"/>']


# --- (a) collectives ---------------------------------------------------------

def collectives(fig, path):
    d = fig["collectives"]
    c = Chart("Collectives on 2 ranks: bus bandwidth by message size", "message size (MB, log scale)",
              "busbw (GB/s)")
    c.set_x(0.7, 420, [1, 4, 16, 64, 256], log=True)
    c.set_y(0, 10, nice_ticks(0, 10))
    share = d["large_sizes_share_of_copy_bandwidth"] * d["copy_bandwidth_GBps_per_rank"]
    yy = c.y(share)
    c.add(f'<line x1="{c.left}" y1="{yy:.1f}" x2="{c.right}" y2="{yy:.1f}" stroke="#888" stroke-dasharray="2,3"/>')
    c.add(f'<text x="{c.x(1.3):.1f}" y="{yy + 14:.1f}" fill="#666" font-size="11" {HALO}>'
          f'about {fmt(d["large_sizes_share_of_copy_bandwidth"])} x memcpy bandwidth '
          f'({fmt(d["copy_bandwidth_GBps_per_rank"])} GB/s per rank)</text>')

    labels = []  # (x, y, text, color): placed once every series is drawn

    def draw(series, color, dash, marker, width=2):
        centers = []
        for p in series["points"]:
            v = p["busbw"]
            lo, hi = (v, v) if not isinstance(v, list) else v
            if "mb_to" in p:
                x1, x2 = c.x(p["mb"]), c.x(p["mb_to"])
                y1, y2 = c.y(hi), c.y(lo)
                h = max(y2 - y1, 3)
                c.add(f'<rect x="{x1:.1f}" y="{y1 - (h - (y2 - y1)) / 2:.1f}" width="{x2 - x1:.1f}" height="{h:.1f}" '
                      f'fill="{color}" fill-opacity="0.3" stroke="{color}"/>')
                c.add(f'<text x="{(x1 + x2) / 2:.1f}" y="{y1 - 6:.1f}" text-anchor="middle" font-size="11" '
                      f'fill="{color}" {HALO}>{fmt(v)}</text>')
                centers.append((x1, c.y((lo + hi) / 2)))
            else:
                centers.append((c.x(p["mb"]), c.y(lo)))
        if len(centers) > 1:
            pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in centers)
            ds = f' stroke-dasharray="{dash}"' if dash else ""
            c.add(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="{width}"{ds}/>')
        for p, (x, y) in zip(series["points"], centers):
            if "mb_to" not in p:
                c.add(point(x, y, color, marker))
                labels.append((x, y, fmt(p["busbw"]), color))

    def place_labels():
        # One label per (size, value) ("4.5, both" where Partita and raw MPI agree); right of the
        # point, nudged up or down away from a neighbour at the same size.
        seen = {}
        for x, y, text, color in labels:
            k = (round(x), text)
            if k in seen:
                seen[k][3] = "#333"
                seen[k][2] = f"{text}, both"
            else:
                seen[k] = [x, y, text, color]
        items = list(seen.values())
        for x, y, text, color in items:
            near = [yy for xx, yy, _, _ in items if abs(xx - x) < 2 and 0 < abs(yy - y) < 22]
            dy = -8 if not near else (-6 if y < min(near) else 15)
            right = x > c.left + 0.8 * (c.right - c.left)  # at the right edge: left of the point
            c.add(f'<text x="{x + (-8 if right else 8):.1f}" y="{y + dy:.1f}" font-size="11" fill="{color}" '
                  f'text-anchor="{"end" if right else "start"}" {HALO}>{escape(text)}</text>')

    for s in d["series"]:
        color = COLORS[s["op"]]
        mpi = s["impl"] == "mpi"
        draw(s, color, "6,4" if mpi else None, "square" if mpi else "circle")
        kind = "band" if all("mb_to" in p for p in s["points"]) else "line"
        c.key(s["label"], color, kind, "6,4" if mpi else None, "square" if mpi else "circle")
    for s in d["before_heap_settings"]["series"]:
        draw(s, "#777", "2,2", "diamond", 1)
    c.key("before the heap settings (both; RS band, AR point)", "#777", "line", "2,2", "diamond")
    place_labels()
    c.write(path)


# --- (b) pipeline bubble -----------------------------------------------------

def bubble(p, m, v=1):
    return (p - 1) / (v * m + p - 1)


def pipeline(fig, path):
    d = fig["pipeline"]
    mmax = d["formula_curves"]["m_max"]
    c = Chart("Pipeline bubble by micro-batches: (p-1)/(v·m+p-1) and measured", "micro-batches per step (m)",
              "bubble (share of the step)")
    c.set_x(0.5, mmax, [1, 2, 4, 6, 8, 10, 12, 14, 16])
    c.set_y(0, 0.8, nice_ticks(0, 0.8))
    curves = [(pp, 1, ["#2f6bbd", "#2e9a52"][i % 2], None) for i, pp in enumerate(d["formula_curves"]["p"])]
    curves.append((d["stages"], d["virtual_stages_interleaved"], PALETTE[4], "6,4"))
    for pp, v, color, dash in curves:
        ms = [m for m in range(1, mmax + 1) if v == 1 or m % pp == 0]
        pts = " ".join(f"{c.x(m):.1f},{c.y(bubble(pp, m, v)):.1f}" for m in ms)
        ds = f' stroke-dasharray="{dash}"' if dash else ""
        c.add(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{ds}/>')
        label = f"formula, p={pp}" + (f", interleaved v={v}" if v > 1 else " (GPipe, 1F1B)")
        c.key(label, color, "line", dash, None)
    lo, hi = d["bubble_over_textbook_formula"]
    for m in d["micro_batches"]:
        for v, color in ((1, "#c0392b"), (d["virtual_stages_interleaved"], "#e08a2c")):
            f = bubble(d["stages"], m, v)
            x = c.x(m) + (-5 if v == 1 else 5)
            for e in whisker(c, x, f * lo, f * hi, color):
                c.add(e)
    c.key(f"measured bubble, p={d['stages']}, m=4 and 8: {lo:.2f}-{hi:.2f} x the formula", "#c0392b", "whisker")
    c.key("the same range on the interleaved formula", "#e08a2c", "whisker")
    c.write(path)


# --- (c) ZeRO ----------------------------------------------------------------

def grouped_bars(c, groups, series, colors, value_labels=True, label_size=10, fmtv=fmt):
    """groups: category labels; series: [(label, [value or [lo, hi] or None per group])]."""
    n, k = len(groups), len(series)
    span = (c.right - c.left) / n
    bw = min(34, span * 0.8 / k)
    cats = []
    for gi, g in enumerate(groups):
        gx = c.left + span * (gi + 0.5)
        cats.append((gx, g))
        for si, (label, vals) in enumerate(series):
            v = vals[gi]
            if v is None:
                continue
            lo, hi = (v, v) if not isinstance(v, list) else v
            x = gx + (si - k / 2) * bw
            y0 = c.y(max(c.ylo, 0))
            c.add(f'<rect x="{x + 1:.1f}" y="{c.y(lo):.1f}" width="{bw - 2:.1f}" height="{y0 - c.y(lo):.1f}" '
                  f'fill="{colors[si]}"/>')
            if hi != lo:
                for e in whisker(c, x + bw / 2, lo, hi, "#333"):
                    c.add(e)
            if value_labels:
                c.add(f'<text x="{x + bw / 2:.1f}" y="{c.y(hi) - 4:.1f}" text-anchor="middle" '
                      f'font-size="{label_size}">{fmtv(v)}</text>')
    for si, (label, _) in enumerate(series):
        c.key(label, colors[si], "bar")
    return cats


def zero_rss(fig, path):
    d = fig["zero"]
    c = Chart("Peak RSS of the largest rank by ZeRO stage (dp 2)", "ZeRO stage (--zero)", "peak RSS (MB)")
    c.set_y(0, 1200, nice_ticks(0, 1200, 6))
    series = [(s["label"], s["values"]) for s in d["peak_rss_MB"]]
    cats = grouped_bars(c, [f"ZeRO {z}" for z in d["stages"]], series, ["#dde5f0", "#c9d5e6", "#7f9fcb", "#2f6bbd"],
                        label_size=9)
    c.write(path, cats)


def zero_step(fig, path):
    d = fig["zero"]
    c = Chart("Step time by ZeRO stage, over ZeRO 0's (dp 2)", "ZeRO stage (--zero)", "step time / ZeRO 0's")
    c.set_y(0, 1.6, nice_ticks(0, 1.6))
    yy = c.y(1.0)
    series = [(s["label"], s["values"]) for s in d["step_time_over_zero0"]]
    cats = grouped_bars(c, [f"ZeRO {z}" for z in d["stages"]], series, ["#d8a0a0", "#c9d5e6", "#7f9fcb", "#2f6bbd"],
                        fmtv=fmt2)
    c.add(f'<line x1="{c.left}" y1="{yy:.1f}" x2="{c.right}" y2="{yy:.1f}" stroke="#333" stroke-dasharray="4,3"/>')
    c.key("ZeRO 0 = 1.00", "#333", "line", "4,3", None)
    c.write(path, cats)


def memory_categories(fig, path):
    d = fig["memory_ledger"]
    c = Chart("Rank 0's memory by category: predicted = measured", "ZeRO stage (dp 2, 2 micro-batches)", "MB")
    c.set_y(0, 1100, nice_ticks(0, 1100, 5))
    colors = ["#2f6bbd", "#7f9fcb", "#2e9a52", "#e08a2c", "#8a5fc0", "#9a9a9a"]
    cats = []
    for gi, key in enumerate(("zero0", "zero3")):
        gx = c.left + (c.right - c.left) * (gi + 0.5) / 2
        cats.append((gx, f"ZeRO {key[-1]}"))
        base, bw = 0.0, 90
        for ci, v in enumerate(d[key]["values"]):
            if v > 0:
                c.add(f'<rect x="{gx - bw / 2:.1f}" y="{c.y(base + v):.1f}" width="{bw}" '
                      f'height="{c.y(base) - c.y(base + v):.1f}" fill="{colors[ci]}"/>')
                if v >= 60:
                    c.add(f'<text x="{gx:.1f}" y="{c.y(base + v / 2) + 4:.1f}" text-anchor="middle" '
                          f'fill="white" font-size="11">{v:.1f}</text>')
            base += v
        c.add(f'<text x="{gx:.1f}" y="{c.y(d[key]["peak"]) - 6:.1f}" text-anchor="middle" font-weight="bold">'
              f'peak {d[key]["peak"]:.1f} MB</text>')
    for ci, name in enumerate(d["categories"]):
        c.key(name, colors[ci], "bar")
    c.write(path, cats)


def mixed_precision(fig, path):
    d = fig["mixed_precision"]
    c = Chart("Mixed precision (dp 2, ZeRO-2): each figure over fp32's", "", "ratio to fp32", legend="top")
    c.set_y(0, 1.4, nice_ticks(0, 1.4))
    names = {"saved activations": "saved\nactivations", "activation memory": "activation\nmemory",
             "model states": "model\nstates", "grad reduce-scatter": "gradient\nreduce-scatter",
             "param all-gather": "parameter\nall-gather", "peak RSS": "peak\nRSS", "step time": "step\ntime"}
    groups = [names.get(r["metric"], r["metric"]) for r in d["over_fp32"]]
    series = [("bf16", [r["bf16"] for r in d["over_fp32"]]), ("fp16", [r["fp16"] for r in d["over_fp32"]])]
    cats = grouped_bars(c, groups, series, ["#2f6bbd", "#e08a2c"], label_size=9, fmtv=fmt2)
    before = d["step_time_before_fused_round_trips"]
    span = (c.right - c.left) / len(groups)
    gx = c.left + span * (len(groups) - 0.5)
    bw = min(34, span * 0.8 / 2)
    for si, key in enumerate(("bf16", "fp16")):
        x = gx + (si - 1) * bw + bw / 2
        c.add(point(x, c.y(before[key]), "#c0392b", "diamond"))
        c.add(f'<text x="{x:.1f}" y="{c.y(before[key]) - 8:.1f}" text-anchor="middle" font-size="10" '
              f'fill="#c0392b">{fmt2(before[key])}</text>')
    yy = c.y(1.0)
    c.add(f'<line x1="{c.left}" y1="{yy:.1f}" x2="{c.right}" y2="{yy:.1f}" stroke="#333" stroke-dasharray="4,3"/>')
    c.key("fp32 = 1.00", "#333", "line", "4,3", None)
    c.key("step time before the fused round trips", "#c0392b", "line", None, "diamond")
    c.write(path, cats)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(root, "docs", "bench-data", "figures.json"))
    ap.add_argument("--out", default=os.path.join(root, "docs", "img"))
    a = ap.parse_args()
    fig = json.load(open(a.data))
    os.makedirs(a.out, exist_ok=True)
    charts = [("collectives-busbw.svg", collectives), ("pipeline-bubble.svg", pipeline),
              ("zero-peak-rss.svg", zero_rss), ("zero-step-time.svg", zero_step),
              ("memory-by-category.svg", memory_categories), ("mixed-precision.svg", mixed_precision)]
    for name, draw in charts:
        path = os.path.join(a.out, name)
        draw(fig, path)
        print(path)


if __name__ == "__main__":
    main()
