"""The Python package against the engine it wraps (docs/python.md, bench/README.md).

Two figures, each on one core (pin it: taskset -c 1 python3 bench/python.py):

1. An analysis from Python, ``remat.analyze(**settings)``, against the same
   analysis timed in C in the same process (``_core.time_analyze``: the
   config built from its key=value settings, resolved, analyzed, freed,
   exactly the path the call takes): configuration A of bench/README.md
   (llama3-70b on tpu7x-256 with ici_tensor_parallelism=4) under each
   built-in policy. The issue's bound: at most 2x.
2. A sweep of 100,000 configurations (batch x policy x mesh) through
   ``remat.sweep``: seconds in all. The bound: under 5 s.

Medians of 7 rounds, each round timing the C path and then the Python
calls, so that both see the same machine state. Prints one line per
figure; ``--check`` exits 1 when a bound is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import remat
from remat import _core

POLICIES = ["full", "minimal", "save_qkv_proj", "save_dot_except_mlp", "save_dot_except_mlpwi",
            "save_out_proj", "qkv_proj_offloaded", "minimal_offloaded", "minimal_with_context",
            "save_dot_with_context_except_mlp", "dots_with_no_batch_dims_saveable",
            "offload_dot_with_no_batch_dims", "everything_saveable", "none", "selective"]
BASE = {"model_name": "llama3-70b", "topology": "tpu7x-256", "ici_tensor_parallelism": 4}


def one_round(calls: int) -> tuple[float, float]:
    """(Python seconds per analysis, C seconds per analysis) over every policy."""
    c = py = 0.0
    for p in POLICIES:
        words = [f"{k}={v}" for k, v in {**BASE, "remat_policy": p}.items()]
        c += _core.time_analyze(["analyze", *words], None, calls)
        t0 = time.perf_counter()
        for _ in range(calls):
            remat.analyze(**BASE, remat_policy=p)
        py += (time.perf_counter() - t0) / calls
    return py / len(POLICIES), c / len(POLICIES)


def sweep_seconds() -> tuple[float, int]:
    grid = {
        "per_device_batch_size": list(range(1, 51)),                        # 50
        "remat_policy": POLICIES[:10],                                      # x 10
        "topology": ["tpu7x-16", "tpu7x-32", "tpu7x-64", "tpu7x-128", "tpu7x-256",
                     "v5p-64", "v5p-128", "v5p-256", "v6e-64", "v6e-256"],  # x 10
        "ici_tensor_parallelism": [1, 2, 4, 8],                             # x 4
        "max_target_length": [2048, 4096, 8192, 16384, 32768],              # x 5
    }
    t0 = time.perf_counter()
    s = remat.sweep(model_name="llama3-70b", grid=grid)
    secs = time.perf_counter() - t0
    bad = sum(e is not None for e in s.columns["error"])
    if bad:
        print(f"sweep: {bad} configurations were bad input", file=sys.stderr)
    return secs, len(s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a bound is missed")
    ap.add_argument("--calls", type=int, default=50, help="calls per policy per round")
    args = ap.parse_args()
    rounds = [one_round(args.calls) for _ in range(7)]
    py = statistics.median(r[0] for r in rounds)
    c = statistics.median(r[1] for r in rounds)
    ratio = statistics.median(r[0] / r[1] for r in rounds)
    print(f"analysis, config A x {len(POLICIES)} policies: Python {py * 1e6:.1f} us, "
          f"C {c * 1e6:.1f} us, ratio {ratio:.2f} (bound 2.00)")
    secs, n = sweep_seconds()
    print(f"sweep: {n} configurations in {secs:.2f} s, {secs / n * 1e6:.1f} us each "
          f"(bound 5 s for 100,000)")
    return 1 if args.check and (ratio > 2.0 or secs * 100_000 / n > 5.0) else 0


if __name__ == "__main__":
    sys.exit(main())
