#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes each sparse MoE graph's expert-parallel variant (graphs/NAME.ep.json
beside every graphs/NAME.json with an all-to-all, a `gather` `over` the
`expert` axis), from the graph file itself: run it after the generators
(moe_graphs.py, moe_family_a.py, family_b.py), with python3, from anywhere.

Why a variant: with the expert mesh axis sharded, MaxText e591f30 runs other
code around the experts (layers/moe.py, sparse_matmul with
is_batch_sharded_by_expert). Without it, the token copies are sorted by
expert once (permute) and sorted back once (unpermute). With it:

  dispatch  sort [b,s,k,e] -> ragged_all_to_all into the receive buffer
            [b,s,k,f,e] (get_ragged_buffer_size) -> local_permute: a second
            sort of the received rows by local expert, a new [b,s,k,f,e]
  combine   local unpermute: the experts' output [b,s,k,f,e] sorted back, a
            new [b,s,k,f,e] -> ragged_all_to_all home [b,s,k,e] -> unpermute:
            the sort back to token order, a new [b,s,k,e]

Each sort is `_sort_activations`, a gather whose gradient is the inverse
sort (another gather). The compiler's buffers show the two receive-buffer
copies: Mixtral 8x7B with expert parallelism 4 on v6e-16 at batch 6 holds
the re-run's experts' output bf16[98304,4096] and its local unsort at once
beside the sorted input, at the step's peak.

The variant marks itself `"expert_parallel": true`: remat picks it when the
expert axis has more than one shard and refuses it otherwise.
"""
import copy
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GRAPHS = os.path.join(HERE, "..")


def a2a_ops(ops):
    """The block's all-to-alls: (dispatch op, combine op) or None."""
    over = [o for o in ops if o["op"] == "gather" and o.get("over") == "expert"]
    if not over:
        return None
    assert len(over) == 2, [o["name"] for o in over]
    return over[0], over[1]


def split(block):
    """Block `block` (its tensors and ops) with the expert-parallel path's
    sorts around its two all-to-alls, in place; False when it has none."""
    t, ops = block["tensors"], block["ops"]
    found = a2a_ops(ops)
    if not found:
        return False
    dispatch, combine = found
    pre = dispatch["name"][: -len("permute")]  # "" or a head module's "mtp_"
    assert dispatch["name"] == pre + "permute" and combine["name"] == pre + "unpermute"
    src, idx = dispatch["in"]
    experts_in = dispatch["out"][0]         # what the experts read: the received rows sorted again
    back_in, back_out = combine["in"][0], combine["out"][0]
    rows = t[src]                            # [b,s,k,e]: the local copies
    sorted_in, recv = pre + "tokens_sorted", pre + "tokens_recv"
    local_out, home = pre + "moe_out_local", pre + "moe_home"
    t[sorted_in] = copy.deepcopy(rows)
    t[recv] = copy.deepcopy(t[experts_in])
    t[local_out] = copy.deepcopy(t[back_in])
    t[local_out].pop("checkpoint", None)
    t[home] = copy.deepcopy(t[back_out])
    i = ops.index(dispatch)
    ops[i:i + 1] = [
        {"name": pre + "sort", "op": "gather", "in": [src, idx], "out": [sorted_in]},
        {"name": pre + "permute", "op": "gather", "in": [sorted_in, idx], "out": [recv], "over": "expert"},
        {"name": pre + "local_permute", "op": "gather", "in": [recv, idx], "out": [experts_in]},
    ]
    i = ops.index(combine)
    ops[i:i + 1] = [
        {"name": pre + "local_unpermute", "op": "gather", "in": [back_in, idx], "out": [local_out]},
        {"name": pre + "unpermute", "op": "gather", "in": [local_out, idx], "out": [home], "over": "expert"},
        {"name": pre + "unsort", "op": "gather", "in": [home, idx], "out": [back_out]},
    ]
    return True


def variant(g):
    """The expert-parallel variant of graph `g`, or None (no all-to-all)."""
    g = copy.deepcopy(g)
    blocks = list(g["blocks"].values()) if "blocks" in g else [g["layer"]]
    changed = [split(b) for b in blocks + [g["head"]]]
    if not any(changed):
        return None
    g["expert_parallel"] = True
    g["description"] += ("; expert-parallel path (MaxText's sparse_matmul with the expert axis sharded): "
                         "tokens sorted, sent to the all-to-all's receive buffer, sorted again by local expert; "
                         "the experts' output sorted back, returned, sorted to token order")
    return g


def main(argv):
    """Writes the variants; with --check, writes nothing and exits 1 naming
    each variant file that is missing or differs from its graph's."""
    check = argv[1:] == ["--check"]
    stale = []
    for path in sorted(glob.glob(os.path.join(GRAPHS, "*.json"))):
        if path.endswith(".ep.json"):
            continue
        with open(path) as f:
            g = json.load(f)
        v = variant(g)
        if v is None:
            continue
        out = path[: -len(".json")] + ".ep.json"
        text = json.dumps(v, indent=2) + "\n"
        if check:
            old = open(out).read() if os.path.exists(out) else None
            if old != text:
                stale.append(os.path.basename(out))
            continue
        with open(out, "w") as f:
            f.write(text)
    for name in stale:
        print(f"ep_variants.py: graphs/{name} is not its graph's variant (run graphs/tools/ep_variants.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
