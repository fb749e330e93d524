#!/usr/bin/env bash
# Builds the seed corpus of every fuzz target under BUILD_DIR/corpus/<target>/
# from the built-in data (graphs/, policies/, models/, hardware/), the golden
# cases (tests/cli, tests/invalid: their cmd files and JSON inputs) and the
# hand-written seeds in fuzz/seeds/<target>/. Needs BUILD_DIR/seedtool (built
# by the fuzz project). Seeds are rebuilt from scratch each time; what the
# fuzzers add goes to BUILD_DIR/corpus-found/<target>/ (run.sh), not here.
#   usage: fuzz/seed.sh BUILD_DIR
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "$1" && pwd)"
tool="$build/seedtool"
if [ ! -x "$tool" ]; then
  echo "seed.sh: $tool missing: build the fuzz project first" >&2
  exit 2
fi
corpus="$build/corpus"
rm -rf "$corpus"
for t in graph policy hw config_args config_file yaml cli; do
  mkdir -p "$corpus/$t"
done

# Built-ins, compact (the pretty-printed graphs are twice as long).
compact() { # FILE OUT [KEY]
  "$tool" "$1" ${3:+"$3"} >"$2" || cp "$1" "$2"
}
for f in "$root"/graphs/*.json; do
  compact "$f" "$corpus/graph/builtin-$(basename "$f" .json)"
done
for f in "$root"/policies/*.json; do
  compact "$f" "$corpus/policy/builtin-$(basename "$f" .json)"
done
for f in "$root"/hardware/*.json; do
  compact "$f" "$corpus/hw/builtin-$(basename "$f" .json)"
done
for f in "$root"/models/*.json; do
  name="$(basename "$f" .json)"
  compact "$f" "$corpus/config_file/model-$name" config
  "$tool" --args "$f" config >"$corpus/config_args/model-$name"
  printf 'analyze\n%s\n' "$(cat "$corpus/config_args/model-$name")" >"$corpus/cli/model-$name"
done

# The golden cases' JSON inputs, as they are (an invalid one may not parse,
# or hold a duplicate key that compacting would drop), by their format.
for f in "$root"/tests/cli/*/*.json "$root"/tests/invalid/*/*.json; do
  [ -e "$f" ] || continue
  case_name="$(basename "$(dirname "$f")")"
  if grep -q '"remat-graph/' "$f"; then
    kind=graph
  elif grep -q '"remat-policy/' "$f"; then
    kind=policy
  elif grep -q '"remat-hardware/' "$f"; then
    kind=hw
  else
    kind=config_file
  fi
  cp "$f" "$corpus/$kind/case-$case_name-$(basename "$f" .json)"
done

# The golden cases' YAML configs, and their base files.
find "$root/tests/cli" "$root/tests/invalid" -name '*.yml' | while read -r f; do
  case_name="$(basename "$(dirname "$f")")"
  cp "$f" "$corpus/yaml/case-$case_name-$(basename "$f" .yml)"
done

# The golden cases' command lines: whole for the CLI, with the case's JSON
# files renamed a.json, b.json, ... and appended after "%%" lines
# (fuzz_cli.c); their key=value settings alone for the config builder.
for dir in "$root"/tests/cli/*/ "$root"/tests/invalid/*/; do
  [ -f "$dir/cmd" ] || continue
  case_name="$(basename "$dir")"
  out="$corpus/cli/case-$case_name"
  cp "$dir/cmd" "$out"
  letters=(a b c d)
  i=0
  for f in "$dir"*.json; do
    [ -e "$f" ] && [ $i -lt 4 ] || continue
    name="$(basename "$f")"
    to="${letters[$i]}.json"
    awk -v n="$name" -v t="$to" '{ if ($0 == n) { print t } else { sub("=" n "$", "=" t); print } }' \
      "$out" >"$out.tmp"
    mv "$out.tmp" "$out"
    i=$((i + 1))
  done
  if grep -q / "$out"; then
    rm "$out" # fuzz_cli does not run arguments holding '/'
  else
    for f in "$dir"*.json; do
      [ -e "$f" ] || continue
      printf '%%%%\n' >>"$out"
      cat "$f" >>"$out"
    done
  fi
  grep '=' "$dir/cmd" | grep -v '^-' | grep -v '\.json$' >"$corpus/config_args/case-$case_name" || true
  [ -s "$corpus/config_args/case-$case_name" ] || rm "$corpus/config_args/case-$case_name"
done

# Hand-written seeds.
for t in graph policy hw config_args config_file yaml cli; do
  if [ -d "$root/fuzz/seeds/$t" ]; then
    for f in "$root/fuzz/seeds/$t"/*; do
      [ -f "$f" ] && cp "$f" "$corpus/$t/seed-$(basename "$f")"
    done
  fi
done

for t in graph policy hw config_args config_file yaml cli; do
  echo "seed.sh: $t: $(find "$corpus/$t" -type f | wc -l) seeds"
done
