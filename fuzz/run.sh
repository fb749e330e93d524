#!/usr/bin/env bash
# Builds the fuzz targets (if needed), seeds their corpora and runs each
# target for SECONDS, one after the other, one process at a time. Prints per
# target the executions and any crash, leak or timeout, and exits non-zero
# if there was one. docs/fuzzing.md explains the targets.
#   usage: fuzz/run.sh SECONDS [TARGET ...]     (targets: graph policy hw
#          config_args config_file yaml cli; default all)
# Environment: FUZZ_BUILD_DIR (default build-fuzz, relative to the
# repository), CC (default clang), FUZZ_TIMEOUT (seconds one input may run,
# default 5; raise it on a loaded machine, where a starved process can
# overrun 5 s on an input that takes milliseconds). Inputs the fuzzers find are kept in
# FUZZ_BUILD_DIR/corpus-found/<target>/ between runs; crash files go to
# FUZZ_BUILD_DIR/artifacts/, logs to FUZZ_BUILD_DIR/logs/.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
  echo "usage: $0 SECONDS [TARGET ...]" >&2
  exit 2
fi
seconds="$1"
shift
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
all_targets=(graph policy hw config_args config_file yaml cli)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all_targets[@]}")
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  CC="${CC:-clang}" cmake -S fuzz -B "$build" >/dev/null
fi
cmake --build "$build" -j"$(nproc)" >/dev/null
build="$(cd "$build" && pwd)"
fuzz/seed.sh "$build" >/dev/null

# Per target: the longest input (the largest seed fits, with room to grow)
# and its dictionary.
max_len() {
  case "$1" in
    graph | cli) echo 16384 ;;
    policy) echo 8192 ;;
    hw) echo 4096 ;;
    config_file | yaml) echo 2048 ;;
    config_args) echo 1024 ;;
  esac
}
dict() {
  case "$1" in
    config_args | config_file) echo "$root/fuzz/config.dict" ;;
    *) echo "$root/fuzz/$1.dict" ;;
  esac
}

mkdir -p "$build/artifacts" "$build/logs"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
failed=0
total=0
printf '%-12s %12s %10s  %s\n' target executions exec/s result
for t in "${targets[@]}"; do
  if [ -z "$(max_len "$t")" ]; then
    echo "run.sh: unknown target '$t' (${all_targets[*]})" >&2
    exit 2
  fi
  found="$build/corpus-found/$t"
  log="$build/logs/$t.log"
  mkdir -p "$found"
  rc=0
  # -close_fd_mask=2: the CLI's one-line errors would flood the log;
  # libFuzzer and the sanitizers keep their own copy of stderr.
  "$build/fuzz_$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout="${FUZZ_TIMEOUT:-5}" \
    -rss_limit_mb=2048 -dict="$(dict "$t")" -print_final_stats=1 -close_fd_mask=2 \
    -artifact_prefix="$build/artifacts/$t-" "$found" "$build/corpus/$t" >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  execs="${execs:-0}"
  total=$((total + execs))
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    failed=1
    what="$(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY|ERROR: libFuzzer|runtime error' "$log" || true)"
    artifact="$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)"
    result="FAILED (rc $rc): ${what:-see $log}${artifact:+; input: $artifact}"
    echo "--- $t: the end of $log" >&2
    tail -n 40 "$log" >&2
  fi
  printf '%-12s %12s %10s  %s\n' "$t" "$execs" "${rate:-?}" "$result"
done
printf '%-12s %12s\n' total "$total"
if [ "$failed" -ne 0 ]; then
  echo "run.sh: a target failed; logs in $build/logs, inputs in $build/artifacts" >&2
fi
exit "$failed"
