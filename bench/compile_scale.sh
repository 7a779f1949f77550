#!/usr/bin/env bash
# Benchmark (not a test): compiling the GPT-3 175B shape (96 layers, d=12288, 96 heads,
# vocabulary 51200, 2048 tokens; weights in a sparse external data file, never read) for
# thousands of ranks. Per layout, training (--train --precision bf16 --zero 1) and
# inference: wall time, peak memory (GNU time), bytes written, the ranks, the distinct
# program files and plan.json's size, each against the issue's limits (10 s, 2 GB,
# 256 MB): what must grow with the graph and the distinct programs, not with the ranks.
#   bash bench/compile_scale.sh [LAYOUT...]   (default: "tp8 dp8" "tp8 pp16 dp8" "tp8 pp16 dp32")
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 models/make_gpt_shape.py --layers 96 --d 12288 --heads 96 --vocab 51200 -o "$work/m" >/dev/null
layouts=("$@")
[ ${#layouts[@]} -eq 0 ] && layouts=("tp8 dp8" "tp8 pp16 dp8" "tp8 pp16 dp32")
printf "%-16s %-9s %6s %8s %7s %9s %7s %9s %8s %9s %8s\n" layout mode ranks programs "time s" "x 10 s" "peak GB" "x 2 GB" \
  "out MB" "x 256 MB" "plan MB"
for layout in "${layouts[@]}"; do
  flags=$(sed -E 's/(tp|pp|dp)([0-9]+)/--\1 \2/g' <<<"$layout")
  for mode in train inference; do
    extra=""
    [ "$mode" = train ] && extra="--train --precision bf16 --zero 1"
    out="$work/out"
    rm -rf "$out"
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %M" -o "$work/time" build/tools/partita compile "$work/m/model.onnx" $flags $extra -o "$out" >/dev/null
    read -r secs kb <"$work/time"
    bytes=$(du -sb "$out" | cut -f1)
    /usr/bin/python3 - "$out/plan.json" "$layout" "$mode" "$secs" "$kb" "$bytes" <<'PY'
import json, os, sys
plan, layout, mode, secs, kb, out = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
p = json.load(open(plan))
files = {f for role in p["roles"] for f in role["programs"].values()}
gb, mb = kb * 1024 / 1e9, out / 1e6
print(f"{layout:<16} {mode:<9} {len(p['ranks']):>6} {len(files):>8} {secs:>7.2f} {secs / 10:>9.2f} {gb:>7.2f} {gb / 2:>9.2f} "
      f"{mb:>8.1f} {mb / 256:>9.2f} {os.path.getsize(plan) / 1e6:>8.1f}")
PY
  done
done
