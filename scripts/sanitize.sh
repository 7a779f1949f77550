#!/usr/bin/env bash
# Builds build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer and runs the
# unit tests and the lit tests there through ctest. Fails on any failing test and on
# any sanitizer report, including one from a command a lit test expects to fail.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bash scripts/install-deps.sh
start=$SECONDS
# -O1: a quicker build; the runtime's kernels keep their own -O3 -march=native.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
  "-DPARTITA_SANITIZE=address;undefined" >/dev/null
cmake --build build-asan -j "$(nproc)" --target partita partita-opt partita-unittests
echo "sanitize: build $((SECONDS - start)) s"

# Reports go to files as well as failing the process: a lit test's `not cmd` would
# otherwise accept a sanitizer abort as the failure it expects.
reports="$root/build-asan/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
# Open MPI's plugins must stay mapped for their leaks to match lsan.supp: a preloaded
# no-op dlclose (test/sanitizers/no_dlclose.c). Preloaded, it precedes the ASan runtime in
# the library list, which ASan refuses unless verify_asan_link_order=0.
cc -shared -fPIC -O2 -o build-asan/no_dlclose.so test/sanitizers/no_dlclose.c
export LD_PRELOAD="$root/build-asan/no_dlclose.so"
export ASAN_OPTIONS="log_path=$reports/asan:verify_asan_link_order=0"
export LSAN_OPTIONS="suppressions=$root/test/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
status=0
# lit, and the GoogleTest cases (gtest_discover_tests names them Suite.Case).
(cd build-asan && ctest --output-on-failure -j "$(nproc)" -R '^lit$|\.') || status=1
if compgen -G "$reports/*" >/dev/null; then
  echo "sanitize: sanitizer reports:"
  for f in "$reports"/*; do echo "== $f"; cat "$f"; done
  status=1
fi
echo "sanitize: build and tests $((SECONDS - start)) s"
exit $status
