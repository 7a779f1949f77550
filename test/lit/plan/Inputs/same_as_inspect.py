"""The planner's memory is inspect's: `plan --compile` writes its best layout, and the peak it printed for
that layout (MB, one decimal) must be the largest predicted peak `partita inspect` prints for the written
plan (bytes), at the micro-batches and schedule plan chose, within the rounding of the printed MB.

  same_as_inspect.py PLAN_OUTPUT OUT_DIR
"""
import re
import subprocess
import sys

text = open(sys.argv[1]).read()
row = re.search(r"^1 +(tp.*?) +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9.]+ +([0-9.]+)(~?)  ", text, re.M)
if not row:
    sys.exit("FAIL: no first layout in:\n" + text)
layout, planned, approx = row.group(1), float(row.group(2)), row.group(3)
if approx:
    sys.exit(f"FAIL: the first layout's memory is marked estimated (~): {layout}")
m = int(re.search(r"m=(\d+)", layout).group(1))
schedule = re.search(r" (gpipe|1f1b|interleaved) ", layout)
cmd = ["partita", "inspect", sys.argv[2], "--micro-batches", str(m)]
if schedule:
    cmd += ["--schedule", schedule.group(1)]
shown = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
peaks = [int(b) for b in re.findall(r"predicted.*peak [0-9.]+ \(([0-9]+) bytes\)", shown)]
if not peaks:
    sys.exit("FAIL: inspect printed no predicted peak:\n" + shown)
inspected = max(peaks) / 1e6
ok = abs(inspected - planned) <= 0.05
print(f"{'PASS' if ok else 'FAIL'}: plan {planned:.1f} MB, inspect {inspected:.4f} MB for {layout}")
sys.exit(0 if ok else 1)
