#!/usr/bin/env bash
# diffrun.sh OLD NEW: runs one list of remat commands with two binaries and
# reports every command whose standard output, standard error or exit code
# differs. Used to show a change is a pure move (or a pure speed-up): the
# list covers `analyze --format json` of every analyzable model under seven
# configurations (pipeline, fp8, vocab tiling, expert and context
# parallelism, host offload, the plain run) and the other commands and
# formats on the default run. Exit 0 when all are identical, 1 otherwise.
set -uo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: tools/diffrun.sh OLD_REMAT NEW_REMAT (two executables)" >&2
  exit 2
fi
old=$1 new=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

commands() {
  local models
  models=$("$old" list models | awk '/^  [a-z0-9]/ && !/not analyzable/ {print $1}')
  local configs=(
    ""
    "ici_pipeline_parallelism=2 num_pipeline_microbatches=4"
    "quantization=fp8"
    "num_vocab_tiling=4"
    "ici_expert_parallelism=2"
    "ici_context_parallelism=2"
    "remat_policy=minimal_offloaded"
  )
  for m in $models; do
    for c in "${configs[@]}"; do
      echo "analyze --format json model_name=$m topology=v5p-64 $c"
    done
  done
  local d="model_name=llama3-8b topology=v5p-16 per_device_batch_size=4"
  for f in text json csv md trace; do
    echo "analyze --no-chart --format $f $d"
    echo "timeline --format $f $d"
  done
  for f in text json csv md; do
    echo "compare --format $f $d"
    echo "solve --format $f $d"
    echo "solve --frontier --format $f $d"
    echo "check --format $f $d"
    for k in layers tensors names stages all; do echo "table --kind $k --format $f $d"; done
  done
  echo "timeline --unfold $d"
  echo "analyze --no-chart"
  echo "check"
  echo "solve"
  echo "list"
  for k in models graphs policies hardware keys; do echo "list $k"; done
  for k in timeline layers policies; do echo "chart --kind $k $d"; done
  echo "report --html - $d"
  echo "analyze model_name=nonesuch"
  echo "analyze per_device_batch_size=0"
}

n=0 bad=0
while IFS= read -r line; do
  n=$((n + 1))
  # shellcheck disable=SC2086  # the command line is split into arguments on purpose
  "$old" $line >"$work/o.out" 2>"$work/o.err" </dev/null; orc=$?
  # shellcheck disable=SC2086
  "$new" $line >"$work/n.out" 2>"$work/n.err" </dev/null; nrc=$?
  if [ $orc != $nrc ] || ! cmp -s "$work/o.out" "$work/n.out" || ! cmp -s "$work/o.err" "$work/n.err"; then
    bad=$((bad + 1))
    echo "differs: remat $line (exit $orc vs $nrc)"
  fi
done < <(commands)
echo "$n commands, $bad differ"
[ $bad = 0 ]
