#!/bin/bash
# No read blocks forever, and the pipes a user means work:
#  - a FIFO with no writer, named as a base_config, to validate, to
#    --config and as a .yml argument, is a one-line error, exit 2, at once;
#  - --config <(...) (a pipe being written, JSON or YAML) still works, and
#    so does a FIFO whose writer comes within the grace;
#  - '-' reads a config, YAML or JSON, from standard input (--config -,
#    validate -, and as an argument);
#  - a directory and a character device are one-line errors, exit 2.
# usage: check_pipes.sh REMAT OUTDIR
REMAT=$1
OUT=$2
rm -rf "$OUT" && mkdir -p "$OUT" && cd "$OUT" || exit 1
fail=0
# expect RC PATTERN CMD...: the command exits RC within 30 s (a read that blocks
# would never end; a sanitized build on a busy machine needs more than a few), its stderr is
# one line matching PATTERN (empty: anything on stdout, nothing checked)
expect() {
    want=$1 pat=$2
    shift 2
    timeout 30 "$@" >out.txt 2>err.txt
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL ($rc, expected $want): $*"; cat err.txt; fail=1; return
    fi
    if [ -n "$pat" ]; then
        if [ "$(wc -l <err.txt)" != 1 ] || ! grep -q -- "$pat" err.txt; then
            echo "FAIL (stderr is not one line with '$pat'): $*"; cat err.txt; fail=1; return
        fi
    fi
    echo "ok: $*"
}
mkfifo nobody.json nobody.yml team.yml
printf 'base_config: team.yml\nmodel_name: llama3-8b\n' >run.yml
FIFO='a FIFO (named pipe)'
expect 2 "team.yml: $FIFO, not a regular file" "$REMAT" check run.yml
expect 2 "nobody.json: $FIFO with no writer" "$REMAT" validate nobody.json
expect 2 "nobody.json: $FIFO with no writer" "$REMAT" check --config nobody.json
expect 2 "nobody.yml: $FIFO with no writer" "$REMAT" check nobody.yml
expect 2 "nobody.yml: $FIFO with no writer" "$REMAT" validate nobody.yml
mkdir adir
expect 2 "adir: a directory, not a file" "$REMAT" check --config adir
expect 2 "adir: a directory, not a file" "$REMAT" validate adir
expect 2 "/dev/null: a character device, not a file" "$REMAT" validate /dev/null
RUN='{"model_name": "llama3-8b", "topology": "tpu7x-8", "per_device_batch_size": 2}'
YRUN=$'model_name: llama3-8b\ntopology: tpu7x-8\nper_device_batch_size: 2\n'
expect 0 "" "$REMAT" check --config <(echo "$RUN")
expect 0 "" "$REMAT" check --config <(sleep 0.3; echo "$RUN")
expect 0 "" "$REMAT" check --config <(printf '%s' "$YRUN")
expect 0 "" "$REMAT" report --html page.html --config <(echo "$RUN")
expect 2 "the config sets no key" "$REMAT" check --config <(true)
(sleep 0.05; echo "$RUN" >nobody.json) &
expect 0 "" "$REMAT" check --config nobody.json
wait
expect 0 "" sh -c "echo '$RUN' | '$REMAT' check --config -"
expect 0 "" sh -c "printf '$YRUN' | '$REMAT' check -"
expect 0 "" sh -c "printf '$YRUN' | '$REMAT' validate -"
expect 2 "<stdin>: the config sets no key" sh -c "'$REMAT' check - </dev/null"
exit $fail
