#!/bin/sh
# analyze's text ends with the chart of live HBM only on a terminal: under a
# pseudo-terminal (util-linux's script) it is there, with --no-chart it is
# not, and through a pipe (every golden case) it is not. Exit 77 (skipped)
# without script.
# usage: check_tty.sh REMAT OUTDIR
REMAT=$1
OUT=$2
if ! command -v script >/dev/null 2>&1; then
    echo "script (util-linux) not found: skipped"
    exit 77
fi
set -e
mkdir -p "$OUT"
ARGS="topology=tpu7x-8 per_device_batch_size=2"
# A terminal ends lines with CR LF; the checks read them without the CR.
script -qec "$REMAT analyze $ARGS" /dev/null | tr -d '\r' >"$OUT/tty.out"
script -qec "$REMAT analyze --no-chart $ARGS" /dev/null | tr -d '\r' >"$OUT/tty_no_chart.out"
"$REMAT" analyze $ARGS >"$OUT/pipe.out"
grep -q 'peak$' "$OUT/tty.out" || { echo "no chart on a terminal"; exit 1; }
grep -q 'budget 94.75 GiB' "$OUT/tty.out" || { echo "no budget rule"; exit 1; }
if grep -q 'live HBM per device over one micro-batch' "$OUT/tty_no_chart.out" "$OUT/pipe.out"; then
    echo "a chart with --no-chart or through a pipe"
    exit 1
fi
echo "the chart is drawn on a terminal only"
