#!/usr/bin/env bash
# The CUDA kernels keep their values in registers: compiles each .cu for the
# build's architecture with ptxas's report (-Xptxas -v) and fails when any
# kernel spills (non-zero "spill stores" or "spill loads"), naming it.
# Usage: check_spills.sh NVCC SOURCE_ROOT FILE.cu... (extra nvcc flags in $NVCC_FLAGS)
set -euo pipefail
nvcc=$1 root=$2
shift 2
status=0
for cu in "$@"; do
  report=$("$nvcc" -std=c++17 -arch=sm_90 -cubin -fmad=false -Xptxas -v ${NVCC_FLAGS:-} -I"$root" "$cu" \
           -o /dev/null 2>&1) || { echo "$report"; exit 1; }
  kernels=$(grep -c "Compiling entry function" <<<"$report" || true)
  spills=$(grep -B2 -E "[1-9][0-9]* bytes spill (stores|loads)" <<<"$report" || true)
  if [[ -n "$spills" ]]; then
    echo "FAIL: $cu: kernels spill registers:"
    echo "$spills"
    status=1
  else
    echo "$cu: $kernels kernels, no spills"
  fi
done
exit $status
