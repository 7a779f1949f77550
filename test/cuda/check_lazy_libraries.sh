#!/usr/bin/env bash
# Fails when a binary of a CUDA build links cuBLASLt: it is opened on first
# use (runtime/cuda/CublasLt.h), because linking it costs every process, CPU
# runs and each test's ranks included, half a second of initialisers.
#   check_lazy_libraries.sh BINARY...
set -euo pipefail
status=0
for binary in "$@"; do
  needed=$(readelf -d "$binary" | grep NEEDED || true)
  if [ -z "$needed" ]; then
    echo "$binary: readelf found no NEEDED entries" >&2
    status=1
  elif grep -q "libcublas" <<<"$needed"; then
    echo "$binary links cuBLAS at load: $(grep libcublas <<<"$needed" | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')" >&2
    status=1
  else
    echo "$binary: no cuBLAS among its $(wc -l <<<"$needed") libraries"
  fi
done
exit $status
