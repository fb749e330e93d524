#!/bin/bash
# Every line check and analyze end with when a run does not pass is a
# command that passes as printed: each is pasted back (its comment is a
# shell comment) and must exit 0 (check) with an OK verdict. Runs that do
# not pass are drawn from the three kinds of fix: a placement (the solver),
# a batch, a slice.
# usage: check_fixes.sh REMAT OUTDIR
REMAT=$1
OUT=$2
rm -rf "$OUT" && mkdir -p "$OUT" && cd "$OUT" || exit 1
export PATH="$(dirname "$REMAT"):$PATH"
fail=0 lines=0
runs=(
    "model_name=llama3.1-405b topology=tpu7x-256"
    "model_name=llama3.1-70b topology=tpu7x-128 per_device_batch_size=6 max_target_length=8192"
    "model_name=llama3-70b per_device_batch_size=4"
    "remat_policy=minimal per_device_batch_size=4"
    "model_name=llama3-8b topology=v6e-8 per_device_batch_size=8 remat_policy=custom mlpwi_0=device"
    "model_name=deepseek3-671b topology=v5p-512 per_device_batch_size=8 max_target_length=8192"
)
for run in "${runs[@]}"; do
    # shellcheck disable=SC2086
    "$REMAT" check $run >check.out 2>/dev/null
    if [ $? != 1 ]; then
        echo "FAIL: 'check $run' passes or fails to run: it should need a fix"; fail=1; continue
    fi
    while IFS= read -r line; do
        cmd=${line%%   #*}
        lines=$((lines + 1))
        if ! eval "$cmd" >fix.out 2>fix.err || ! grep -q '^OK:' fix.out; then
            echo "FAIL: the fix does not pass: $cmd"; cat fix.out fix.err; fail=1
        else
            echo "ok: $cmd"
        fi
    done < <(grep '^  remat check ' check.out)
done
if [ "$lines" -lt 8 ]; then
    echo "FAIL: only $lines fix lines were printed"; fail=1
fi
exit $fail
