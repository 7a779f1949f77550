# Sourced by the benchmarks that time Debian's torch: sets `torch_env`, the
# variables to run it with (as `env "${torch_env[@]}" python3 ...`).
# Debian's torch uses OpenBLAS, which mis-detects some AVX-512 CPUs (slow
# Prescott kernels, flattering Partita): OPENBLAS_CORETYPE=SkylakeX, but only
# on a CPU with AVX-512 (on an AVX2-only CPU, e.g. many AMD ones, that core
# type dies of an illegal instruction).
torch_env=()
if grep -qw avx512f /proc/cpuinfo; then
  torch_env=(OPENBLAS_CORETYPE=SkylakeX)
fi
