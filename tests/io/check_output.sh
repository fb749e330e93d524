#!/bin/bash
# -o FILE on every command that writes output: the output goes to FILE and
# nothing to standard output; a run that fails leaves no file; a file that
# cannot be written is a one-line error, exit 2.
# usage: check_output.sh REMAT OUTDIR
REMAT=$1
OUT=$2
rm -rf "$OUT" && mkdir -p "$OUT" && cd "$OUT" || exit 1
fail=0
RUN="model_name=llama3-8b topology=tpu7x-8 per_device_batch_size=2"
# each: the file, its expected exit code, a word it must hold, the command
while read -r file rc word cmd; do
    # shellcheck disable=SC2086
    "$REMAT" $cmd -o "$file" >stdout.txt 2>/dev/null
    got=$?
    if [ "$got" != "$rc" ] || [ -s stdout.txt ] || ! grep -q -- "$word" "$file" 2>/dev/null; then
        echo "FAIL ($got, expected $rc): $cmd -o $file"; fail=1
    else
        echo "ok: $cmd -o $file"
    fi
done <<EOT
analyze.txt 0 peak analyze --no-chart $RUN
analyze.json 0 remat-result/1 analyze --format json $RUN
compare.txt 0 rank compare $RUN
check.txt 0 OK: check $RUN
check_no.txt 1 fit check model_name=llama3-70b per_device_batch_size=4
table.csv 0 layer table --format csv $RUN
solve.txt 0 overrides solve $RUN
timeline.csv 0 start timeline --format csv $RUN
chart.svg 0 <svg chart $RUN
report.html 0 <html report $RUN
list.txt 0 models list
list_keys.txt 0 hbm_budget list keys
EOT
printf 'model_name: llama3-8b\n' >run.yml
"$REMAT" validate -o validate.txt run.yml >stdout.txt && grep -q 'ok: config' validate.txt &&
    [ ! -s stdout.txt ] && echo "ok: validate -o" || { echo "FAIL: validate -o"; fail=1; }
# a failed run leaves no file
"$REMAT" check zzzz=1 -o failed.txt 2>/dev/null
[ $? = 2 ] && [ ! -e failed.txt ] && echo "ok: no file after a failure" ||
    { echo "FAIL: a failed run left failed.txt"; fail=1; }
# an unwritable file: one line, exit 2
"$REMAT" check $RUN -o /nonexistent/dir/x.txt 2>err.txt
[ $? = 2 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q 'cannot write file' err.txt &&
    echo "ok: unwritable" || { echo "FAIL: unwritable"; cat err.txt; fail=1; }
exit $fail
