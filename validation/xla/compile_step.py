"""The child process of oracle.py: MaxText's train_compile, with the compiled step kept.

Runs MaxText's own `train_compile.main` (its config parsing, topology mesh,
shaped state and the jit of train_step, as a user's `train_compile` command
does) with one change: `jit_and_compile` is wrapped so the compiled object
it returns is kept, and its memory_analysis() and cost_analysis() are
written to the result file. Any exception, XLA's OOM among them, is written
as the record's `error`. Nothing of MaxText is copied or modified.
"""

import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback

import maxtext_args
import py311

PACKAGES = ("jax", "jaxlib", "libtpu", "flax", "optax", "orbax-checkpoint", "numpy", "ml_dtypes", "qwix", "aqtp")

# cost_analysis() has one entry per operand too; these are the step's totals.
COST_KEYS = ("flops", "transcendentals", "bytes accessed", "optimal_seconds")


def maxtext_version(src):
  """Where MaxText came from: a checkout's commit, or the package's version."""
  import maxtext  # pylint: disable=import-outside-toplevel

  info = {"path": os.path.dirname(os.path.abspath(maxtext.__file__))}
  try:
    from maxtext import version  # pylint: disable=import-outside-toplevel

    info["version"] = getattr(version, "__version__", None)
  except ImportError:
    info["version"] = None
  if src:
    info["source"] = "checkout"
    try:
      commit = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
      info["commit"] = commit.stdout.strip()
      dirty = subprocess.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no", "--", "*.py", "*.yml"], capture_output=True, text=True, check=True)
      info["modified"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.CalledProcessError):
      info["commit"] = None
  else:
    info["source"] = "package"
    try:
      info["version"] = importlib.metadata.version("maxtext")
    except importlib.metadata.PackageNotFoundError:
      pass
  del info["path"]
  return info


def versions(src):
  out = {"python": platform.python_version()}
  for name in PACKAGES:
    try:
      out[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      out[name] = None
  out["maxtext"] = maxtext_version(src)
  return out


def memory_fields(ma):
  """Every figure of a CompiledMemoryStats, by its own attribute names."""
  fields = {}
  for name in dir(ma):
    if name.startswith("_"):
      continue
    value = getattr(ma, name)
    if isinstance(value, int):
      fields[name] = value
    elif isinstance(value, (bytes, bytearray)):
      fields[name + "_length"] = len(value)
  return fields


def cost_fields(cost):
  if isinstance(cost, list):  # older jax: one dict per program
    cost = cost[0] if cost else {}
  return {k: float(cost[k]) for k in COST_KEYS if cost and k in cost}


def compile_run(args, record):
  """Runs train_compile.main on the translated settings; fills record."""
  if args.maxtext:
    sys.path.insert(0, os.path.join(args.maxtext, "src"))
  py311.install()
  margs = maxtext_args.translate(args.settings)
  from maxtext.trainers.pre_train import train_compile  # pylint: disable=import-outside-toplevel
  import maxtext  # pylint: disable=import-outside-toplevel

  base_yml = os.path.join(os.path.dirname(os.path.abspath(maxtext.__file__)), "configs", "base.yml")
  record["versions"] = versions(args.maxtext)
  kept = {}
  original = train_compile.jit_and_compile

  def keeping(*a, **k):
    t0 = time.monotonic()
    compiled = original(*a, **k)
    kept["compiled"] = compiled
    kept["seconds"] = time.monotonic() - t0
    return compiled

  train_compile.jit_and_compile = keeping
  out_dir = tempfile.mkdtemp(prefix="remat-oracle-out-")
  t0 = time.monotonic()
  try:
    train_compile.main(margs.argv(base_yml, out_dir))
  finally:
    record["env"] = {k: os.environ.get(k) for k in ("LIBTPU_INIT_ARGS", "XLA_FLAGS", "TPU_MIN_LOG_LEVEL")}
    # The dump flags are the harness's own (oracle.py), not the run's.
    flags = re.sub(r"--xla_dump_[a-z_]+=\S+", "", record["env"]["XLA_FLAGS"] or "").split()
    record["env"]["XLA_FLAGS"] = " ".join(flags) or None
    record["compile_seconds"] = round(kept.get("seconds", time.monotonic() - t0), 1)
  compiled = kept["compiled"]
  record["memory_analysis"] = memory_fields(compiled.memory_analysis())
  record["cost_analysis"] = cost_fields(compiled.cost_analysis())


def child_main(args):
  record = {}
  try:
    compile_run(args, record)
  except Exception as e:  # pylint: disable=broad-exception-caught
    # XLA's OOM arrives here as a JaxRuntimeError; so does anything MaxText
    # refuses. Both are data for the parent, which tells them apart.
    record["error"] = str(e) + "\n" + "".join(traceback.format_exception(e)[-6:])
  with open(args.result, "w", encoding="utf-8") as f:
    json.dump(record, f)
  return 0
