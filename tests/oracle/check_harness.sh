#!/bin/sh
# SPDX-License-Identifier: MIT
# A test of the harness's own Python (validation/xla) that needs the
# standard library alone: its reading of XLA's messages (xla_messages.py)
# or of a dump's live ranges (xla_timeline.py). Skipped (77), saying so,
# where no Python 3 interpreter is on the path: the harness cannot run
# there either.
#   check_harness.sh SOURCE_DIR TEST_NAME    (TEST_NAME: xla_messages, xla_timeline)
set -u
src=${1:?usage: check_harness.sh SOURCE_DIR TEST_NAME}
name=${2:?usage: check_harness.sh SOURCE_DIR TEST_NAME}
if ! command -v python3 >/dev/null 2>&1; then
    echo "oracle.$name: skipped: no python3 on the path"
    exit 77
fi
exec python3 "$src/tests/oracle/test_$name.py" "$src"
