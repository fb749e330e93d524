#!/bin/sh
# analyze's text ends with the chart of live HBM only on a terminal: under a
# pseudo-terminal (util-linux's script) it is there, with --no-chart it is
# not, and through a pipe (every golden case) it is not. On a terminal the
# chart takes the terminal's width and, on a colour terminal, colour: ANSI
# escapes at 120 columns with TERM=xterm, none with NO_COLOR or TERM=dumb,
# and no escape, 64 columns, through a pipe with --chart.
# Exits 77 (skipped), saying why, without script or where no pseudo-terminal
# can be opened (a container without /dev/pts).
# usage: check_tty.sh REMAT OUTDIR
REMAT=$1
OUT=$2
if ! command -v script >/dev/null 2>&1; then
    echo "skipped: script (util-linux) not found"
    exit 77
fi
if ! script -qec true /dev/null >/dev/null 2>&1; then
    echo "skipped: no pseudo-terminal can be opened here (script: $(script -qec true /dev/null 2>&1 | head -1))"
    exit 77
fi
set -e
mkdir -p "$OUT"
ARGS="model_name=llama3-8b topology=tpu7x-8 per_device_batch_size=2"
ESC=$(printf '\033')
# A terminal ends lines with CR LF; the checks read them without the CR.
tty_run() {
    script -qec "stty cols 120 rows 40; $1" /dev/null | tr -d '\r'
}
tty_run "TERM=xterm $REMAT analyze $ARGS" >"$OUT/tty.out"
tty_run "TERM=xterm $REMAT analyze --no-chart $ARGS" >"$OUT/tty_no_chart.out"
tty_run "TERM=xterm NO_COLOR=1 $REMAT analyze $ARGS" >"$OUT/tty_no_color.out"
tty_run "TERM=dumb $REMAT analyze $ARGS" >"$OUT/tty_dumb.out"
"$REMAT" analyze $ARGS >"$OUT/pipe.out"
"$REMAT" analyze --chart $ARGS >"$OUT/pipe_chart.out"
grep -q 'peak' "$OUT/tty.out" || { echo "no chart on a terminal"; exit 1; }
grep -q 'budget 94.75 GiB' "$OUT/tty.out" || { echo "no budget rule"; exit 1; }
if grep -q 'live HBM per device over one micro-batch' "$OUT/tty_no_chart.out" "$OUT/pipe.out"; then
    echo "a chart with --no-chart or through a pipe"
    exit 1
fi
grep -q "$ESC\[" "$OUT/tty.out" || { echo "no colour on a colour terminal"; exit 1; }
for f in tty_no_color tty_dumb pipe_chart; do
    if grep -q "$ESC" "$OUT/$f.out"; then
        echo "colour in $f.out"
        exit 1
    fi
done
# the axis line: one rule character per chart column
axis_cols() {
    grep '0 GiB └' "$1" | head -1 | grep -o '─' | wc -l | tr -d ' '
}
wide=$(axis_cols "$OUT/tty_no_color.out")
narrow=$(axis_cols "$OUT/pipe_chart.out")
[ "$narrow" = 64 ] || { echo "a chart through a pipe is $narrow columns, not 64"; exit 1; }
[ "$wide" = 91 ] || { echo "the chart on a 120-column terminal is $wide columns, not 91"; exit 1; }
echo "the chart is drawn on a terminal only, in its width, in colour where it can be"
