#!/usr/bin/env bash
# Verifies the CUDA device on a machine with a GPU, in one run of a few
# minutes: run from the repository root there, with gpu-bundle.tar.xz (made
# here by scripts/gpu-bundle.sh) carried beside it. Each step prints its
# result; the report (library versions, every step's output and time) goes to
# $OUT/gpu-check.txt when $OUT is set (the device tool's output folder).
# Exit 0 only when every step passed: a GPU test that skips (77: no GPU seen)
# counts as a failure here.
#   device run: bash tools/gpu-check.sh            (carry: gpu-bundle.tar.xz)
set -uo pipefail
cd "$(dirname "$0")/.."
report=${OUT:-/tmp}/gpu-check.txt
work=$(mktemp -d /tmp/partita-gpu-check.XXXXXX)
if [[ ! -f gpu-bundle.tar.xz ]]; then
  echo "gpu-check.sh: no gpu-bundle.tar.xz here: run scripts/gpu-bundle.sh on the build machine and carry it" >&2
  exit 2
fi
tar -C "$work" -xJf gpu-bundle.tar.xz
bin=$work/bin
# The CUDA libraries: the GPU machine's Python packages (nvidia-cuda-runtime,
# nvidia-cublas, nvidia-nccl-cu13, ...), else a toolkit's.
cudalibs=$(python3 - <<'PY' 2>/dev/null
import glob, importlib.util, os
dirs = set()
spec = importlib.util.find_spec("nvidia")
for root in (spec.submodule_search_locations if spec else []):
    for so in glob.glob(os.path.join(root, "**", "lib*.so*"), recursive=True):
        dirs.add(os.path.dirname(so))
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH="$work/lib:${cudalibs}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
failed=0
exec > >(tee "$report") 2>&1
echo "== versions"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi failed"
python3 -m pip list 2>/dev/null | grep -i -E "^nvidia-(cublas|cuda-runtime|nccl|cudnn)" || true
ldd "$bin/partita" | grep -E "cudart|cublasLt|nccl|not found"
# step NAME TIMEOUT_S COMMAND...: runs it, prints its status and seconds.
step() {
  local name=$1 limit=$2
  shift 2
  echo "== $name"
  local start=$SECONDS
  if declare -F "$1" >/dev/null; then # a function of this script: it times its own commands
    "$@"
  else
    timeout "$limit" "$@"
  fi
  local rc=$?
  echo "== $name: $([[ $rc == 0 ]] && echo passed || echo "FAILED (exit $rc)") in $((SECONDS - start)) s"
  [[ $rc == 0 ]] || failed=$((failed + 1))
}
step "GEMM plans and cuBLASLt descriptors (no GPU needed)" 60 "$bin/partita-cuda-host-tests" --gtest_brief=1
step "the CUDA device: copies, events, elementwise, casts, AdamW, GEMMs" 300 "$bin/partita-cuda-tests"
# A whole model on the GPU against PyTorch's output (the fixture's reference).
gpt_on_cuda() {
  local f=models/fixtures/gpt_fused_tied_op17_static
  timeout 120 "$bin/partita" run $f.onnx --input ids=$f.b2.in.ids.npy --output-dir "$work/gpt" --device cuda || return 1
  python3 -c "import glob, numpy as np; a=np.load(glob.glob('$work/gpt/*.npy')[0]); b=np.load('$f.b2.ref.out.npy'); \
e=float(np.abs(a-b).max()/np.abs(b).max()); print('relative error against torch', e); assert e < 1e-4, e"
}
step "GPT inference on --device cuda against torch" 120 gpt_on_cuda
# BERT needs ops the device lacks yet: recorded, not counted.
echo "== BERT on --device cuda (recorded: it may stop at an op without a CUDA kernel)"
"$bin/partita" run models/fixtures/bert_op14_static.onnx \
  --input ids=models/fixtures/bert_op14_static.b2.in.ids.npy \
  --input attention_mask=models/fixtures/bert_op14_static.b2.in.attention_mask.npy \
  --output-dir "$work/bert" --device cuda 2>&1 | tail -3
echo "== gpu-check: $failed step(s) failed"
rm -rf "$work"
exit $((failed > 0))
