#!/bin/sh
# The HTML report as a browser takes it, in headless Chromium: the page runs
# its script with no error and logs nothing to the console, its DOM holds the
# verdict and the timeline's peak label, and a screenshot is not blank (at
# least 5% of its pixels differ from the background, counted by png_ink).
# Exit 77 (ctest: skipped) when no Chromium is installed; CI installs
# Debian's chromium.
# usage: check_html.sh REMAT PNG_INK OUTDIR
REMAT=$1
INK=$2
OUT=$3
BROWSER=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then
        BROWSER=$b
        break
    fi
done
if [ -z "$BROWSER" ]; then
    echo "no chromium found (Debian: chromium): skipped"
    exit 77
fi
set -e
rm -rf "$OUT"
mkdir -p "$OUT"
"$REMAT" report --html "$OUT/report.html" model_name=llama3-8b topology=tpu7x-8 per_device_batch_size=2
# --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start;
# the page is remat's own. A profile of its own keeps $HOME untouched.
run() {
    timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$OUT/profile" --enable-logging=stderr --v=0 "$@" \
        "file://$OUT/report.html"
}
run --dump-dom >"$OUT/dom.html" 2>"$OUT/browser.log"
fail() {
    echo "report.html: $1 (see $OUT)"
    exit 1
}
grep -q '<body[^>]*data-script="ok"' "$OUT/dom.html" || fail "the script did not run to its end"
if grep -q 'data-script-error=' "$OUT/dom.html"; then
    fail "a script error: $(grep -o 'data-script-error="[^"]*"' "$OUT/dom.html")"
fi
if grep -q 'CONSOLE' "$OUT/browser.log"; then
    fail "console messages: $(grep 'CONSOLE' "$OUT/browser.log")"
fi
grep -q '<p id="verdict" class="verdict ok">OK: peak ' "$OUT/dom.html" || fail "no verdict"
grep -q 'id="remat-peak-label"[^>]*>peak [0-9.]* GiB at ' "$OUT/dom.html" || fail "no peak label"
run --hide-scrollbars --window-size=1100,1600 --screenshot="$OUT/report.png" \
    >/dev/null 2>>"$OUT/browser.log"
"$INK" "$OUT/report.png" 0.05 || fail "the screenshot is blank"
echo "report.html loads cleanly in $BROWSER and is drawn"
