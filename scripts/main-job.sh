#!/usr/bin/env bash
# The main job: install, build, then train the bundled byte-level GPT
# (models/export_gpt.py: d=64, 4 heads, 2 layers, 256-byte vocabulary) on a
# license text Debian ships, on 4 ranks (tensor parallel 2 x data parallel 2),
# with AdamW; prints the loss every 20 steps and checks that it fell.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
out=build/main-job
rm -rf "$out" && mkdir -p "$out"
/usr/bin/python3 models/export_gpt.py --vocab 256 --d 64 --heads 4 --layers 2 --seq 64 --batch 4 \
  -o "$out/gpt_byte.onnx" 2>/dev/null
/usr/bin/python3 -c "
import numpy as np
text = open('/usr/share/common-licenses/GPL-3', 'rb').read()
np.save('$out/gpl3.npy', np.frombuffer(text, np.uint8).astype(np.int64))
print(f'{len(text)} byte tokens from /usr/share/common-licenses/GPL-3')"
./build/tools/partita compile "$out/gpt_byte.onnx" --train --tp 2 --dp 2 -o "$out/compiled" | head -1
./build/tools/partita launch -n 4 "$out/compiled" --steps 200 --data "$out/gpl3.npy" --batch 4 --seq 64 \
  --lr 3e-3 --seed 1 --output-dir "$out/trained" | awk 'NR == 1 || NR % 20 == 0'
/usr/bin/python3 - "$out/trained/loss.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first = sum(float(r["loss"]) for r in rows[:10]) / 10
last = sum(float(r["loss"]) for r in rows[-10:]) / 10
print(f"mean loss of the first 10 steps {first:.3f}, of the last 10 {last:.3f}")
sys.exit(0 if last < 0.5 * first else "the loss did not fall")
PY
