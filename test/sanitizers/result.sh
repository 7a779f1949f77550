#!/usr/bin/env bash
# ctest's `sanitizers` / `fuzzing` tests: the exit status scripts/test.sh recorded for
# scripts/CHECK.sh earlier in this run (each record is used once). Without a record (ctest
# run on its own) the test is skipped: the scripts take minutes and build elsewhere.
#   result.sh CHECK RESULT_DIR
set -uo pipefail
check="$1" record="$2/$1.result"
if [ ! -f "$record" ]; then
  echo "no result recorded: scripts/test.sh runs scripts/$check.sh before ctest (or run it yourself)"
  exit 77
fi
rc=$(cat "$record")
rm -f "$record"
echo "scripts/$check.sh exited $rc earlier in scripts/test.sh (its output precedes the ctest run)"
exit "$rc"
