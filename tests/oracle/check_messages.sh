#!/bin/sh
# SPDX-License-Identifier: MIT
# The harness's reading of XLA's messages (validation/xla/xla_messages.py)
# with the standard library alone. Skipped (77), saying so, where no
# Python 3 interpreter is on the path: the harness cannot run there either.
#   check_messages.sh SOURCE_DIR
set -u
src=${1:?usage: check_messages.sh SOURCE_DIR}
if ! command -v python3 >/dev/null 2>&1; then
    echo "oracle.messages: skipped: no python3 on the path"
    exit 77
fi
exec python3 "$src/tests/oracle/test_xla_messages.py" "$src"
