#!/usr/bin/env bash
# The layer check catches what it is there to catch: on a small tree made
# here, an include of a later layer, a circle of modules, a public header
# including a private one, an object calling into a later layer and two
# objects calling each other each fail it with their line; the same tree
# without them passes. Usage: selftest.sh CHECK_LAYERS_SH (needs cc, nm).
set -uo pipefail
check=$1
command -v cc >/dev/null || { echo "skipped: no cc"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
mkdir -p "$t/src/low" "$t/src/high" "$t/include/remat/low"
printf 'low   the lower layer\nhigh  the higher layer\n' >"$t/src/layers.txt"

expect() { # expect WANT_RC PATTERN MODE ARGS...: the check's exit code and a line
  local want=$1 pattern=$2
  shift 2
  local out rc
  out=$(bash "$check" "$@" 2>&1); rc=$?
  if [ "$rc" != "$want" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: check $* gave $rc (want $want, a line matching '$pattern'):"
    echo "$out" | sed 's/^/  /'
    fail=1
  fi
}

# A clean tree: high includes low, low includes only itself.
printf '#include "low/a.h"\nint a(void) { return 1; }\n' >"$t/src/low/a.c"
printf 'int a(void);\n' >"$t/src/low/a.h"
printf '#include "remat/low/api.h"\n#include "low/a.h"\nint h(void) { return a(); }\n' >"$t/src/high/h.c"
printf '#define API 1\n' >"$t/include/remat/low/api.h"
expect 0 "run downward, no circle" includes "$t"

# An upward include.
printf '#include "high/h.h"\n' >"$t/src/low/up.c"
printf 'int h(void);\n' >"$t/src/high/h.h"
expect 1 "of the later layer high" includes "$t"
rm "$t/src/low/up.c"

# A circle of modules within a layer.
printf '#include "low/b.h"\n' >>"$t/src/low/a.c"
printf 'int b(void);\n' >"$t/src/low/b.h"
printf '#include "low/a.h"\nint b(void) { return a(); }\n' >"$t/src/low/b.c"
expect 1 "circle among modules" includes "$t"
printf '#include "low/a.h"\nint a(void) { return 1; }\n' >"$t/src/low/a.c"

# A public header that includes a private one; an include that is not there.
printf '#include "low/a.h"\n' >>"$t/include/remat/low/api.h"
expect 1 "includes the private" includes "$t"
printf '#define API 1\n#include "low/none.h"\n' >"$t/src/low/c.h"
printf '#define API 1\n' >"$t/include/remat/low/api.h"
expect 1 "which is not src/low/none.h" includes "$t"
rm "$t/src/low/c.h"
expect 0 "run downward, no circle" includes "$t"

# Objects: clean, then an upward call, then a call circle.
mkdir -p "$t/o/src/low" "$t/o/src/high"
cc -c -o "$t/o/src/low/a.o" -x c - <<<'int a(void) { return 1; }'
cc -c -o "$t/o/src/high/h.o" -x c - <<<'int a(void); int h(void) { return a(); }'
expect 0 "run downward, no circle" objects "$t" "$t/o/src/low/a.o" "$t/o/src/high/h.o"
cc -c -o "$t/o/src/low/a.o" -x c - <<<'int h(void); int a(void) { return h(); }'
expect 1 "calls into high/h of the later layer" objects "$t" "$t/o/src/low/a.o" "$t/o/src/high/h.o"
cc -c -o "$t/o/src/low/a.o" -x c - <<<'int b(void); int a(void) { return b(); }'
cc -c -o "$t/o/src/low/b.o" -x c - <<<'int a(void); int b(void) { return a(); }'
expect 1 "circle among objects" objects "$t" "$t/o/src/low/a.o" "$t/o/src/low/b.o"

# Bad usage.
expect 2 "usage" nonsense "$t"
[ $fail = 0 ] && echo "the layer check caught every planted problem and passed the clean tree"
exit $fail
