#!/usr/bin/env bash
# Builds the libFuzzer targets (test/fuzz) into build-fuzz/ with clang-14 + ASan/UBSan and
# runs each for a bounded time, two at a time. Prints libFuzzer's final stats per target
# and fails when a target finds a crash, a leak, a timeout or an out-of-memory input.
#   FUZZ_SECONDS (default 45): time per target.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
seconds="${FUZZ_SECONDS:-45}"
bash scripts/install-deps.sh
start=$SECONDS
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "-DPARTITA_SANITIZE=address;undefined" -DPARTITA_FUZZ=ON \
  >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target partita-fuzzers
echo "fuzz: build $((SECONDS - start)) s"

# Seed corpora: the committed fixtures and lit inputs, binary forms of the ONNX text
# inputs, and the plan.json seeds in test/fuzz/corpus. Found inputs accumulate in
# build-fuzz/corpus/<target> across runs.
work="$root/build-fuzz/fuzz-run"
rm -rf "$work" && mkdir -p "$work"
seeds="$work/seeds"
mkdir -p "$seeds"/{onnx-binary,onnx-text,ir-parser,plan,npy}
# Every fixture with its large initializers made graph inputs (~10 KB instead of
# ~150 KB: far more executions per second); the lit inputs carry small initializers.
find test/lit -name '*.onnx' -exec cp {} "$seeds/onnx-binary/" \;
find test/lit -name '*.onnxtxt' -exec cp {} "$seeds/onnx-text/" \;
find test/lit -name '*.pir' -exec cp {} "$seeds/ir-parser/" \;
cp models/fixtures/*.npy "$seeds/npy/"
find test/lit -name '*.npy' -exec cp {} "$seeds/npy/" \;
# Committed seeds per target (plan.json forms; inputs that once crashed a fuzzer).
for t in test/fuzz/corpus/*/; do cp "$t"* "$seeds/$(basename "$t")/"; done
find test/lit -name '*plan*.json' -exec cp {} "$seeds/plan/" \;
/usr/bin/python3 - "$seeds/onnx-text" "$seeds/onnx-binary" <<'PY'
import onnx, onnx.helper, onnx.parser, pathlib, sys
for f in pathlib.Path("models/fixtures").glob("*.onnx"):
    m = onnx.load(str(f))
    for t in list(m.graph.initializer):
        if sum(1 for _ in t.dims) and len(t.raw_data) > 64:
            m.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
            m.graph.initializer.remove(t)
    (pathlib.Path(sys.argv[2]) / (f.stem + ".noweights.onnx")).write_bytes(m.SerializeToString())
for f in pathlib.Path(sys.argv[1]).iterdir():
    try:
        m = onnx.parser.parse_model(f.read_text())
    except Exception:
        continue
    (pathlib.Path(sys.argv[2]) / (f.stem + ".fromtext.onnx")).write_bytes(m.SerializeToString())
PY

export ASAN_OPTIONS="detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
fuzz_one() {
  local name="$1" corpus="$root/build-fuzz/corpus/$1"
  mkdir -p "$corpus" "$work/artifacts"
  # A fixed seed (FUZZ_SEED, default 1) keeps CI's mutations the same run to run; a
  # long exploratory run sets another.
  "$root/build-fuzz/test/fuzz/partita-fuzz-$name" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" \
    "$corpus" "$seeds/$name" >"$work/$name.log" 2>&1
}
targets=(onnx-binary onnx-text ir-parser plan npy)
declare -A rc
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for t in "${targets[@]:i:2}"; do
    fuzz_one "$t" &
    pids+=("$t:$!")
  done
  for p in "${pids[@]}"; do
    if wait "${p#*:}"; then rc[${p%%:*}]=0; else rc[${p%%:*}]=$?; fi
  done
done

status=0
printf '%-12s %10s %10s %8s %8s %8s  %s\n' target execs execs/s cov ft corpus result
for t in "${targets[@]}"; do
  log="$work/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  result=ok
  if [ "${rc[$t]}" != 0 ] || compgen -G "$work/artifacts/$t-*" >/dev/null; then
    result="FAILED (exit ${rc[$t]}; log $log)"
    status=1
  fi
  printf '%-12s %10s %10s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
if ((status)); then
  for t in "${targets[@]}"; do
    [ "${rc[$t]}" = 0 ] && continue
    echo "== $t: the end of $work/$t.log"
    grep -v '^#[0-9]' "$work/$t.log" | tail -60
  done
  echo "fuzz: crashing inputs:" "$work"/artifacts/*
fi
echo "fuzz: build and runs $((SECONDS - start)) s"
exit $status
