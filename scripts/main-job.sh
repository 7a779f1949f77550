#!/usr/bin/env bash
# The main job on the bundled default model: compile (canonicalize) the tiny GPT
# and print its IR. Grows with the runtime and parallel issues.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/tools/partita compile models/fixtures/gpt_fused_tied_op17_static.onnx -o build/out/gpt --print-ir
