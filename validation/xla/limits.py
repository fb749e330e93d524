#!/usr/bin/env python3
"""XLA:TPU's usable HBM per device, measured from the compiler itself.

XLA's OOM message prints its limit rounded ("Used 16.24G of 15.75G hbm"), so
the exact figure is found by bisection: compile, for one device of the
topology's chip, a program whose only large buffer is an argument of N
words, and find the largest N that compiles. The limit recorded is that
program's peak_memory_in_bytes plus its generated code (what XLA's check
adds up: "Used X" = arguments + temporaries + program), within one
1024-word tile of the first size that fails. Each compile takes well under
a second; a chip takes about 35 of them.

    python3 validation/xla/limits.py [--maxtext SRC] v5e-8 v4-8 ...
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import maxtext_args  # pylint: disable=wrong-import-position
import oracle  # pylint: disable=wrong-import-position
import xla_messages  # pylint: disable=wrong-import-position


def prepare(maxtext):
  """This process set up to ask libtpu for a topology's devices, as the
  oracle's compile child is (its environment, MaxText's sources on the
  path when a checkout is given, the Python 3.11 shims)."""
  os.environ.update(oracle.COMPILE_ENV)
  os.environ.pop("JAX_PLATFORMS", None)
  if maxtext:
    sys.path.insert(0, os.path.join(os.path.abspath(maxtext), "src"))
  import py311  # pylint: disable=import-outside-toplevel

  py311.install()


def devices_of(topology, slices=1):
  """The topology's devices (of `slices` slices) as MaxText's train_compile builds them."""
  from jax.experimental.topologies import get_topology_desc  # pylint: disable=import-outside-toplevel
  from maxtext.utils import accelerator_to_spec_map  # pylint: disable=import-outside-toplevel

  hw = accelerator_to_spec_map.get_system_characteristics(topology)
  return get_topology_desc(
      platform=hw.platform,
      topology_name=hw.topology_name,
      chip_config_name=hw.chip_config_name,
      chips_per_host_bounds=hw.chips_per_host_bounds,
      num_slices=slices,
      wrap=hw.wrap,
  ).devices


def probe(topology):
  """{'limit_bytes', 'fits_peak', 'fits_code', 'fails_message'} for one chip."""
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel
  from jax.sharding import Mesh, NamedSharding, PartitionSpec  # pylint: disable=import-outside-toplevel

  mesh = Mesh(np.array(devices_of(topology)[:1]), ("x",))
  f = jax.jit(lambda a: (a * 2 + 1).sum(), in_shardings=NamedSharding(mesh, PartitionSpec()))

  def compile_words(n):
    try:
      ma = f.lower(jax.ShapeDtypeStruct((n,), jnp.float32)).compile().memory_analysis()
      return True, (ma.peak_memory_in_bytes, ma.generated_code_size_in_bytes)
    except Exception as e:  # pylint: disable=broad-exception-caught
      return False, str(e)

  lo, hi = 1 << 20, 1 << 36  # words: 4 MiB fits, 256 GiB does not
  ok, got = compile_words(lo)
  if not ok:
    raise RuntimeError(f"{topology}: a 4 MiB program does not compile: {got[:300]}")
  best, fail = got, None
  while hi - lo > 1024:
    mid = (lo + hi) // 2
    ok, got = compile_words(mid)
    if ok:
      lo, best = mid, got
    else:
      hi, fail = mid, got
  parsed = xla_messages.parse_oom(fail or "")
  return {
      "limit_bytes": best[0] + best[1],
      "fits_peak_bytes": best[0],
      "fits_generated_code_bytes": best[1],
      "fails_message": parsed[3] if parsed else (fail or "").splitlines()[0][:300],
      "printed_limit_bytes": parsed[1] if parsed else None,
  }


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  p.add_argument("--maxtext", help="a MaxText checkout (default: the installed maxtext package)")
  p.add_argument("topologies", nargs="+")
  args = p.parse_args(argv)
  prepare(args.maxtext)
  out = {}
  for topology in args.topologies:
    profile, _ = maxtext_args.slice_of(topology)
    entry = probe(topology)
    entry["topology"] = topology
    out[profile] = entry
  json.dump(out, sys.stdout, indent=1, sort_keys=True)
  sys.stdout.write("\n")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
