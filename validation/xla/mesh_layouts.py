#!/usr/bin/env python3
"""Which ICI meshes JAX can lay out on which TPU slices, asked of JAX itself.

MaxText builds its device mesh with jax.experimental.mesh_utils
(create_device_mesh, or create_hybrid_device_mesh per slice across slices),
from the ici_*_parallelism values in its mesh_axes order. Unless
allow_split_physical_axes is set (MaxText's default: false), JAX gives each
logical axis whole physical axes of the slice's chip grid, and fails with
"Failed to find assignment for logical_axis_index I of size S with remaining
assignable mesh [...]" when it cannot: MaxText stops before it compiles.
remat models that rule (src/model/mesh_layout.c); this script records JAX's
own answer for every TPU slice of MaxText's accelerator table up to
--max-devices devices and a spread of meshes on each, with the grid the
table gives the slice, so a ctest (mesh_layouts) holds remat to it.

No compile runs: the topology's devices and the mesh are all it needs, so
the whole file takes a few seconds.

    python3 validation/xla/mesh_layouts.py --maxtext SRC > validation/mesh_layouts.json
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compile_step  # pylint: disable=wrong-import-position
import limits  # pylint: disable=wrong-import-position

# MaxText's mesh_axes (base.yml at e591f30) and remat's spelling of each
# axis's ici key; None: an axis remat refuses off 1 (diloco,
# context_autoregressive), never varied here.
MESH_AXES = [
    ("diloco", None),
    ("data", "ici_data_parallelism"),
    ("stage", "ici_pipeline_parallelism"),
    ("fsdp", "ici_fsdp_parallelism"),
    ("fsdp_transpose", "ici_fsdp_transpose_parallelism"),
    ("context", "ici_context_parallelism"),
    ("context_usp_ulysses", "ici_context_usp_ulysses_parallelism"),
    ("context_autoregressive", None),
    ("tensor", "ici_tensor_parallelism"),
    ("tensor_sequence", "ici_tensor_sequence_parallelism"),
    ("expert", "ici_expert_parallelism"),
    ("autoregressive", "ici_autoregressive_parallelism"),
]
FAMILIES = ("v4-", "v5e-", "v5p-", "v6e-", "tpu7x-")
FAILED = re.compile(r"logical_axis_index (\d+) of size (\d+) with remaining assignable mesh \[([0-9, ]*)\]")


def divisors(n):
  return [d for d in range(2, n) if n % d == 0]


def meshes(devices):
  """A spread of ICI meshes over `devices`: FSDP alone; FSDP with each other
  axis at each divisor; FSDP with data and tensor, and with tensor and
  expert, at the small powers of two."""
  out = [{"fsdp": devices}]
  for axis, key in MESH_AXES:
    if key is None or axis == "fsdp":
      continue
    for f in divisors(devices):
      out.append({"fsdp": devices // f, axis: f})
  for a, b in (("data", "tensor"), ("tensor", "expert"), ("stage", "context")):
    for x in (2, 4, 8):
      for y in (2, 4, 8):
        if devices % (x * y) == 0 and devices // (x * y) > 1:
          out.append({a: x, "fsdp": devices // (x * y), b: y})
  return out


def layout(devices, shape, slices):
  """None when JAX lays the mesh out, else (axis index, size, remaining)."""
  from jax.experimental import mesh_utils  # pylint: disable=import-outside-toplevel

  try:
    if slices > 1:
      dcn = [slices if axis == "data" else 1 for axis, _ in MESH_AXES]
      mesh_utils.create_hybrid_device_mesh(shape, dcn, devices)
    else:
      mesh_utils.create_device_mesh(shape, devices)
    return None
  except NotImplementedError as e:
    m = FAILED.search(str(e))
    if not m:
      raise
    return int(m.group(1)), int(m.group(2)), [int(v) for v in m.group(3).split(",")]


def cases_for(name, slices):
  devices = limits.devices_of(name, slices)
  per_slice = len(devices) // slices
  for mesh in meshes(per_slice):
    shape = [mesh.get(axis, 1) for axis, _ in MESH_AXES]
    failed = layout(devices, shape, slices)
    settings = [f"topology={name}"] + ([f"num_slices={slices}", f"dcn_data_parallelism={slices}"]
                                       if slices > 1 else [])
    settings += [f"{key}={mesh[axis]}" for axis, key in MESH_AXES if key and axis in mesh]
    case = {"settings": settings, "lays_out": failed is None}
    if failed:
      case["failed_axis"] = MESH_AXES[failed[0]][0]
      case["failed_size"] = failed[1]
      case["remaining"] = failed[2]
    yield case


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  p.add_argument("--maxtext", help="a MaxText checkout (default: the installed maxtext package)")
  p.add_argument("--max-devices", type=int, default=1024)
  args = p.parse_args(argv)
  limits.prepare(args.maxtext)
  from maxtext.utils import accelerator_to_spec_map  # pylint: disable=import-outside-toplevel

  table = accelerator_to_spec_map.UserFacingNameToSystemCharacteristics
  grids, cases = {}, []
  for name, hw in sorted(table.items()):
    if not name.startswith(FAMILIES) or hw.platform != "tpu":
      continue
    grids[name] = [int(v) for v in hw.topology_name.split(":")[1].split("x")]
    if hw.devices_per_slice > args.max_devices:
      continue
    cases.extend(cases_for(name, 1))
  for name in ("v5e-16", "v6e-32", "v5p-64", "tpu7x-64"):
    cases.extend(cases_for(name, 2))
  out = {
      "format": "remat-mesh-layouts/1",
      "versions": compile_step.versions(args.maxtext),
      "grids": grids,
      "cases": cases,
  }
  # one case a line: the file stays small and its diffs readable
  head = {k: out[k] for k in ("format", "versions", "grids")}
  text = json.dumps(head, indent=1, sort_keys=True)[:-2]
  lines = ",\n  ".join(json.dumps(c, sort_keys=True) for c in cases)
  sys.stdout.write(f'{text},\n "cases": [\n  {lines}\n ]\n}}\n')
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
