#!/usr/bin/env bash
# Installs, builds and runs the whole test suite through ctest. The sanitizer build
# (scripts/sanitize.sh) and the fuzzers (scripts/fuzz.sh) run first, with their output
# here; the main ctest run comes last and counts their results as the tests
# `sanitizers` and `fuzzing` (test/sanitizers/result.sh), so its closing line covers all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
mkdir -p build/test
for check in sanitize fuzz; do
  start=$SECONDS
  rc=0
  bash "scripts/$check.sh" || rc=$?
  echo "test.sh: scripts/$check.sh exited $rc after $((SECONDS - start)) s"
  echo "$rc" >"build/test/$check.result"
done
cd build && ctest --output-on-failure -j "$(nproc)"
