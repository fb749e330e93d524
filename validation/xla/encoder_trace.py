"""What vision_residuals.py and audio_residuals.py share: the command line
(a MaxText checkout or the installed package, then key=value settings), the
config and mesh of a one-example trace on JAX's CPU backend, and the
residuals JAX saves listed with their bytes."""

import argparse
import os
import sys
import tempfile

from residuals import TRACE_ENV  # the decoder layers' trace's


def parse(argv, doc, default_model):
  """The script's arguments, and its settings (default model_name=@default_model)."""
  p = argparse.ArgumentParser(description=doc.split("\n\n", maxsplit=1)[0])
  p.add_argument("--maxtext", help="a MaxText checkout (default: the installed maxtext package)")
  p.add_argument("settings", nargs="*", help=f"MaxText key=value settings (default model_name={default_model})")
  args = p.parse_args(argv)
  return args, args.settings or [f"model_name={default_model}"]


def config_and_mesh(args, settings, run_name, extra=()):
  """MaxText's config for @settings at one example a device, unscanned, with
  synthetic data and no checkpoint (plus @extra keys), and its mesh."""
  os.environ.update(TRACE_ENV)
  if args.maxtext:
    sys.path.insert(0, os.path.join(args.maxtext, "src"))
  # pylint: disable=import-outside-toplevel
  import jax
  import maxtext
  from maxtext.configs import pyconfig
  from maxtext.utils import maxtext_utils

  base_yml = os.path.join(os.path.dirname(os.path.abspath(maxtext.__file__)), "configs", "base.yml")
  keys = settings + [f"run_name={run_name}", f"base_output_directory={tempfile.mkdtemp()}",
                     "per_device_batch_size=1", "scan_layers=false", "dataset_type=synthetic",
                     "enable_checkpointing=false"] + list(extra)
  cfg = pyconfig.initialize([None, base_yml] + keys)
  return cfg, jax.sharding.Mesh(maxtext_utils.create_device_mesh(cfg), cfg.mesh_axes)


def residual_records(res):
  """Each residual of jax's saved_residuals as shape, dtype, bytes and source."""
  out = []
  for aval, source in res:
    n = 1
    for d in aval.shape:
      n *= d
    out.append({"shape": list(aval.shape), "dtype": str(aval.dtype),
                "bytes": n * aval.dtype.itemsize, "source": source})
  return out
