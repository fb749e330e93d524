#!/bin/sh
# SPDX-License-Identifier: MIT
# Each sparse MoE graph's expert-parallel variant (graphs/*.ep.json) is
# what graphs/tools/ep_variants.py writes from the graph as it is now, so
# a graph regenerated without its variant fails here. Skipped (77), saying
# so, where no Python 3 interpreter is on the path.
#   check_ep_variants.sh SOURCE_DIR
set -u
src=${1:?usage: check_ep_variants.sh SOURCE_DIR}
if ! command -v python3 >/dev/null 2>&1; then
    echo "graphs.ep_variants: skipped: no python3 on the path"
    exit 77
fi
exec python3 "$src/graphs/tools/ep_variants.py" --check
