#!/usr/bin/env bash
# Scale benchmark (not a test): import + canonicalize + print of GPT shapes whose
# weights live in a sparse external-data file, at 12, 48 and 96 layers (d=12288,
# 96 heads, seq 2048: the 175B shape). Prints wall time and peak RSS per depth and
# the ratio to the 12-layer run; the weights (653 GiB for 96 layers) are never read.
set -euo pipefail
cd "$(dirname "$0")/.."
opt=build/tools/partita-opt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base_t=""; base_m=""
printf "%-8s %10s %14s %12s %12s\n" layers "wall s" "peak RSS MB" "t/t(12)" "rss/rss(12)"
for L in 12 48 96; do
  /usr/bin/python3 models/make_gpt_shape.py --layers "$L" --d 12288 --heads 96 -o "$work/gpt$L" >/dev/null
  /usr/bin/time -f "%e %M" -o "$work/time" "$opt" "$work/gpt$L/model.onnx" --passes=canonicalize >"$work/out.pir"
  read -r t kb <"$work/time"
  mb=$(awk "BEGIN{printf \"%.1f\", $kb/1024}")
  [ -n "$base_t" ] || { base_t=$t; base_m=$mb; }
  printf "%-8s %10s %14s %12s %12s\n" "$L" "$t" "$mb" \
    "$(awk "BEGIN{printf \"%.2f\", $t/$base_t}")" "$(awk "BEGIN{printf \"%.2f\", $mb/$base_m}")"
  rm -rf "$work/gpt$L"
done
