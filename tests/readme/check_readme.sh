#!/bin/bash
# Every example of the README's "Use" block runs as printed and exits as it
# says: 0, or 1 where its comment says "exit 1". The files the examples name
# (run.json, my_run.yml and its base, my_graph.json) and the generate-config
# program are this folder's; each line runs in a fresh copy of it, with
# `remat` on PATH.
# usage: check_readme.sh REMAT README OUTDIR
REMAT=$1
README=$2
OUT=$3
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$OUT" && mkdir -p "$OUT/bin" || exit 1
ln -s "$REMAT" "$OUT/bin/remat"
export PATH="$OUT/bin:$HERE:$PATH"
# the block after "## Use", its continuation lines joined
mapfile -t lines < <(awk '
    /^## Use/ { use = 1; next }
    use && /^```sh/ { inblock = 1; next }
    inblock && /^```/ { exit }
    inblock {
        if (sub(/\\$/, "")) { acc = acc $0; next }
        print acc $0; acc = ""
    }' "$README")
if [ "${#lines[@]}" -lt 10 ]; then
    echo "FAIL: only ${#lines[@]} examples found in $README"
    exit 1
fi
fail=0 n=0
for line in "${lines[@]}"; do
    n=$((n + 1))
    cmd=${line%%#*}
    want=0
    case "$line" in *"# exit 1"*) want=1 ;; esac
    dir="$OUT/run$n"
    mkdir -p "$dir" && cp "$HERE"/*.json "$HERE"/*.yml "$dir"/
    (cd "$dir" && timeout 120 bash -c "$cmd" >out.txt 2>err.txt)
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL (exit $rc, expected $want): $cmd"
        head -3 "$dir/err.txt"
        fail=1
    else
        echo "ok (exit $rc): $cmd"
    fi
done
echo "$n README examples run"
exit $fail
