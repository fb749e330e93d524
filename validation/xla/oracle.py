#!/usr/bin/env python3
"""The compiler as the judge: XLA:TPU's own memory figure for one run.

Takes a run in remat's `key=value` settings, writes the matching MaxText
command, compiles MaxText's real training step ahead of time for the run's
TPU topology (MaxText's train_compile path: libtpu compiles for a named
topology on a host with no TPU) and prints one JSON record: every field of
the compiled step's memory_analysis(), XLA's OOM message with its used and
limit bytes when it does not fit, the compile's wall time and peak RSS, the
versions of everything involved and the command that reproduces it.

    python3 validation/xla/oracle.py [--maxtext SRC] [--dump DIR] \
        model_name=llama2-7b topology=v5e-8 per_device_batch_size=2

`--maxtext SRC` is a MaxText checkout (its `src` folder is put on the path);
without it the installed `maxtext` package is used. The compile runs in a
child process so that its peak RSS is its own and a crash or a hang of the
compiler is a recorded failure, not the harness's.

The figure: `xla_peak_bytes` is `memory_analysis().peak_memory_in_bytes`
when the step compiles, and the `Used X` of XLA's compile-time OOM message
when it does not (docs/validation.md, "Which of XLA's figures").
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import maxtext_args  # pylint: disable=wrong-import-position
import xla_dump  # pylint: disable=wrong-import-position
import xla_messages  # pylint: disable=wrong-import-position

ORACLE_FORMAT = "remat-xla-run/1"

# The environment MaxText's own CI uses to compile for TPU on a CPU host: no
# metadata-server query, libtpu may be loaded by a second process, no cloud
# clients. JAX_PLATFORMS must be unset: the target devices come from the
# topology, the backend itself reports cpu. libtpu's info log goes to the
# output, which is read for what XLA's rematerialization pass did
# (xla_messages.parse_remat).
COMPILE_ENV = {
    "TPU_SKIP_MDS_QUERY": "1",
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "true",
    "DECOUPLE_GCLOUD": "TRUE",
    "TPU_MIN_LOG_LEVEL": "0",
    "TPU_STDERR_LOG_LEVEL": "0",
}


def parse_args(argv):
  """The harness's options, then the run's key=value settings."""
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  p.add_argument("--maxtext", help="a MaxText checkout (default: the installed maxtext package)")
  p.add_argument("--dump", help="write XLA's dumps (buffer assignment, memory-usage report) to this folder")
  p.add_argument("--timeout", type=float, default=1800.0, help="seconds before the compile is killed (default 1800)")
  p.add_argument("--libtpu-init-args", default=None, help="LIBTPU_INIT_ARGS for the compile (default: the environment's)")
  p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
  p.add_argument("--result", help=argparse.SUPPRESS)
  p.add_argument("settings", nargs="*", help="the run as remat's key=value settings")
  args = p.parse_args(argv)
  for s in args.settings:
    if "=" not in s or s.startswith("="):
      p.error(f"setting '{s}' is not key=value")
  return args


def reproduce_command(args):
  """The shell command that compiles this run again (the harness itself)."""
  parts = ["python3", "validation/xla/oracle.py"]
  if args.maxtext:
    parts += ["--maxtext", "MAXTEXT_SRC"]
  if args.libtpu_init_args:
    parts += ["--libtpu-init-args", repr(args.libtpu_init_args)]
  return " ".join(parts + list(args.settings))


def run_child(args):
  """Compiles in a child process; returns (child's record or None, rc, output, wall, rss)."""
  env = dict(os.environ)
  env.update(COMPILE_ENV)
  env.pop("JAX_PLATFORMS", None)
  if args.libtpu_init_args is not None:
    env["LIBTPU_INIT_ARGS"] = args.libtpu_init_args
  with tempfile.TemporaryDirectory(prefix="remat-oracle-") as tmp:
    # MaxText dumps the step's HLO to /tmp/xla_dump whenever XLA_FLAGS is
    # unset; each run dumps to its own folder instead (two compiles at once
    # must not mix), and the peak's breakdown is read from it.
    dump = os.path.abspath(args.dump) if args.dump else os.path.join(tmp, "dump")
    flags = f"--xla_dump_to={dump} --xla_dump_hlo_module_re=jit_train_step"
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flags).strip()
    result = os.path.join(tmp, "result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--result", result]
    if args.maxtext:
      cmd += ["--maxtext", os.path.abspath(args.maxtext)]
    cmd += list(args.settings)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
      out, _ = proc.communicate(timeout=args.timeout)
      rc = proc.returncode
    except subprocess.TimeoutExpired:
      proc.kill()
      out, _ = proc.communicate()
      rc = None
    wall = time.monotonic() - t0
    # ru_maxrss of the children is the largest child's peak, in KiB on Linux.
    import resource  # pylint: disable=import-outside-toplevel

    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    record = None
    if os.path.exists(result):
      with open(result, encoding="utf-8") as f:
        record = json.load(f)
      record["breakdown"] = xla_dump.peak_breakdown(dump)
  return record, rc, out or "", wall, rss


def main(argv):
  args = parse_args(argv)
  if args.child:
    import compile_step  # pylint: disable=import-outside-toplevel

    return compile_step.child_main(args)
  try:
    margs = maxtext_args.translate(args.settings)
  except maxtext_args.SettingsError as e:
    print(f"oracle.py: {e}", file=sys.stderr)
    return 2
  record, rc, out, wall, rss = run_child(args)
  entry = {
      "format": ORACLE_FORMAT,
      "settings": list(args.settings),
      "hardware": margs.hardware,
      "topology": margs.topology,
      "num_slices": margs.num_slices,
      "devices": margs.devices,
      "maxtext_command": margs.command_line(),
      "command": reproduce_command(args),
      "wall_seconds": round(wall, 1),
      "peak_rss_bytes": rss,
  }
  entry.update(xla_messages.outcome(record, rc, out))
  json.dump(entry, sys.stdout, indent=1, sort_keys=True)
  sys.stdout.write("\n")
  return 0 if entry["status"] in ("fits", "oom", "host_oom") else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
