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
# -g1: line tables (a report names function, file and line); the build takes 377 s, 489 s with -g.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  "-DPARTITA_SANITIZE=address;undefined" >/dev/null
cmake --build build-asan -j "$(nproc)" --target partita partita-opt partita-unittests
echo "sanitize: build $((SECONDS - start)) s"

# A sanitizer report fails its process, but a lit test's `not cmd` (or `not partita launch`
# over a rank) would accept that as the failure it expects. So ASan/LSan reports also go to
# files, and every lit test's output (LIT_OPTS -o: a JSON report) is searched for UBSan's,
# which GCC's runtime prints to stderr whatever log_path says.
reports="$root/build-asan/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
litResults="$root/build-asan/lit-results.json"
rm -f "$litResults"
export LIT_OPTS="-o $litResults"
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
if [ -f "$litResults" ] && grep -qE 'runtime error:|ERROR: (Address|Leak)Sanitizer' "$litResults"; then
  echo "sanitize: sanitizer reports in the output of these lit tests:"
  /usr/bin/python3 -c 'import json, re, sys
for t in json.load(open(sys.argv[1]))["tests"]:
    hits = re.findall(r".*(?:runtime error:|ERROR: (?:Address|Leak)Sanitizer).*", t.get("output", ""))
    if hits:
        print("  " + t["name"] + ": " + hits[0].strip())' "$litResults"
  status=1
fi
echo "sanitize: build and tests $((SECONDS - start)) s"
exit $status
