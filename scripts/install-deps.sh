#!/usr/bin/env bash
# Installs the Debian packages Partita builds and tests with. Idempotent: when every package is
# present it only checks (dpkg-query) and returns in well under a second.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev python3-onnx libonnx-testdata
  llvm-14-dev llvm-14-tools libgtest-dev
  clang-14 libclang-rt-14-dev libomp-14-dev
  libopenmpi-dev openmpi-bin libdnnl-dev
  python3-torch python3-numpy
  nodejs iproute2
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# ONNX Runtime (reference executor for differential tests); its post-install download cannot
# reach the network, the npm package bundles the CPU library.
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -d "$here/test/ort/node_modules/onnxruntime-node" ]; then
  (cd "$here/test/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --silent >/dev/null)
fi
