#!/usr/bin/env bash
# Scale benchmark (not a test): `partita compile` of GPT shapes whose weights live
# in a sparse external-data file, at 12, 48 and 96 layers (d=12288, 96 heads,
# seq 2048: the 175B shape), at --tp 8 (inference) and --tp 8 --dp 8 --train.
# Prints wall time, peak RSS and artifact size per depth and the ratio to the
# 12-layer run: compile time and memory follow the graph, not the weights (653 GiB
# for 96 layers, never read: rank programs refer to their shards in the file).
set -euo pipefail
cd "$(dirname "$0")/.."
partita=build/tools/partita
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf "%-22s %-7s %8s %12s %13s %9s %10s\n" layout layers "wall s" "peak RSS MB" "artifacts MB" "t/t(12)" "rss/rss(12)"
for L in 12 48 96; do
  /usr/bin/python3 models/make_gpt_shape.py --layers "$L" --d 12288 --heads 96 -o "$work/gpt$L" >/dev/null
done
for layout in "--tp 8" "--tp 8 --dp 8 --train"; do
  base_t="" base_m=""
  for L in 12 48 96; do
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %M" -o "$work/time" "$partita" compile "$work/gpt$L/model.onnx" $layout -o "$work/out" >/dev/null
    read -r t kb <"$work/time"
    mb=$(awk "BEGIN{printf \"%.1f\", $kb/1024}")
    art=$(du -sm "$work/out" | cut -f1)
    rm -rf "$work/out"
    [ -n "$base_t" ] || { base_t=$t; base_m=$mb; }
    printf "%-22s %-7s %8s %12s %13s %9s %10s\n" "$layout" "$L" "$t" "$mb" "$art" \
      "$(awk "BEGIN{printf \"%.2f\", $t/$base_t}")" "$(awk "BEGIN{printf \"%.2f\", $mb/$base_m}")"
  done
done
