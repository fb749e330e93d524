#!/usr/bin/env bash
# Start-up time of remat's commands against /bin/true: N paired,
# interleaved rounds (default 200) of /bin/true, remat --help, remat version,
# remat list and remat analyze --no-chart, timed by a small C harness
# (bench/startup.c, compiled here with cc) from the spawn to the exit. Prints
# per command the median time and the median over rounds of its ratio to
# /bin/true's time in the same round. bench/README.md gives the figures.
#   usage: bench/startup.sh [BUILD_DIR [N]]     (default build, 200)
# Pin it to one core for steadier figures: taskset -c 1 bench/startup.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
n="${2:-200}"
remat="$(cd "$build" 2>/dev/null && pwd)/remat" || remat="$build/remat"
if [ ! -x "$remat" ]; then
  echo "startup.sh: no $remat; build it first (cmake --build $build --target remat)" >&2
  exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"${CC:-cc}" -std=c11 -O2 -Wall -Wextra -o "$tmp/startup" "$root/bench/startup.c"
deps="$(ldd "$remat" 2>&1 || true)"
if grep -q 'statically linked' <<<"$deps"; then
  echo "$remat: statically linked"
else
  echo "$remat: $(grep -c . <<<"$deps") entries in ldd's list (vdso and loader included)"
fi
"$tmp/startup" "$n" -- /bin/true -- "$remat" --help -- "$remat" version -- "$remat" list \
  -- "$remat" analyze --no-chart
