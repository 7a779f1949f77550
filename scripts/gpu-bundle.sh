#!/usr/bin/env bash
# Builds, here, what tools/gpu-check.sh needs on a GPU machine that has no
# Debian development packages: partita and the CUDA test binaries (debug
# information stripped) and the non-CUDA shared libraries they load (LLVM,
# protobuf, ONNX, oneDNN, Open MPI, ...) in gpu-bundle/ (git ignores it; carry
# it to the machine as gpu-bundle.tar.xz, which this script packs: carry that
# file with the device tool). The CUDA libraries (cudart, cuBLASLt, NCCL) are not
# carried: gpu-check.sh takes the GPU machine's own, from its Python packages.
# Usage: scripts/gpu-bundle.sh [BUILD_DIR]   (default build/, configured with CUDA)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=gpu-bundle
limit_mib=60
cmake --build "$build" --target partita partita-cuda-tests partita-cuda-host-tests
# Never remove what this script did not make.
if [[ -e $out && ! -f $out/.partita-gpu-bundle ]]; then
  echo "gpu-bundle.sh: $out exists and is not a bundle this script made; move it away first" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
touch "$out/.partita-gpu-bundle"
bins=("$build/tools/partita" "$build/test/partita-cuda-tests" "$build/test/partita-cuda-host-tests")
for b in "${bins[@]}"; do
  strip --strip-debug -o "$out/bin/$(basename "$b")" "$b"
done
# Shared libraries: everything ldd resolves but the C library's own, the GCC
# runtime (the GPU image's is newer and compatible) and CUDA's.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libgcc_s\.|libstdc\+\+\.|libcuda\.|libcudart\.|libcublas|libcublasLt\.|libnccl\.|libcudnn)'
for b in "${bins[@]}"; do
  ldd "$b" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L "$path" "$out/lib/$name"
  strip --strip-unneeded "$out/lib/$name" 2>/dev/null || true
done
tar -C "$out" -cf - . | xz -T0 -6 >"$out.tar.xz"
size_mib=$(( $(du -sb "$out" | cut -f1) / 1048576 ))
packed_mib=$(( $(stat -c %s "$out.tar.xz") / 1048576 ))
echo "gpu-bundle.sh: $out is $size_mib MiB ($(ls "$out/lib" | wc -l) libraries, $(ls "$out/bin" | wc -l) binaries)," \
     "$out.tar.xz $packed_mib MiB"
if (( packed_mib >= limit_mib )); then
  echo "gpu-bundle.sh: $out.tar.xz is over $limit_mib MiB (the device tool carries 64 MiB with the tree)" >&2
  exit 1
fi
