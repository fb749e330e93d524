#!/usr/bin/env python3
"""One compiled run, remat beside XLA: the two peaks, their moments, and what each is made of.

    python3 validation/xla/explain.py [--remat build/remat] RUN_ID [RUN_ID ...]
    python3 validation/xla/explain.py --grep v5p-16_llama3.1-70b

Reads validation/xla_runs.json (the run's settings and XLA's breakdown at
its peak, rebuilt from the buffer assignment by xla_dump.py) and runs
`remat analyze --format json` on the same settings. The miss classes of
docs/validation.md are read off this side-by-side.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GIB = float(1 << 30)


def remat_result(binary, settings):
  p = subprocess.run([binary, "analyze", "--format", "json"] + settings, capture_output=True, text=True, check=False)
  if p.returncode != 0:
    return None, p.stderr.strip()
  return json.loads(p.stdout), None


def explain(run, binary):
  lim = run["xla_limit_bytes"]
  print(f"== {run['id']}: XLA {run['status']} at {run['xla_peak_bytes'] / GIB:.2f} GiB "
        f"({run['xla_peak_bytes'] / lim:.3f} of its limit)")
  r, err = remat_result(binary, run["settings"])
  if r is None:
    print(f"   remat: {err}")
    return
  at = r["peak_at"]
  print(f"   remat {r['peak_hbm_bytes'] / GIB:.2f} GiB ({r['peak_hbm_bytes'] / run['xla_peak_bytes']:.3f} of XLA's), "
        f"at {at['step']} {at['where']} layer {at['layer']} op {at['op']}")
  xr = run.get("xla_remat")
  if xr and xr.get("needed"):
    print(f"   XLA's rematerialization pass: the step {xr['before_bytes'] / GIB:.2f} GiB before it "
          f"({xr['before_bytes'] / lim:.3f} of the limit; remat's step is "
          f"{r['peak_hbm_bytes'] / xr['before_bytes']:.3f} of it), {xr['after_bytes'] / GIB:.2f} after")
  elif xr:
    print("   XLA's rematerialization pass: not needed (the step was under its limit)")
  print(f"   remat expects XLA's figure at {r['xla_expected_peak_bytes'] / GIB:.2f} GiB "
        f"({r['xla_expected_peak_bytes'] / run['xla_peak_bytes']:.3f} of it)")
  for k, v in sorted(r["breakdown"].items(), key=lambda kv: -kv[1]):
    if v:
      print(f"     remat {v / GIB:8.3f} GiB  {k}")
  bd = run.get("xla_peak_breakdown") or {}
  if "by_kind" not in bd:
    print("   XLA: no breakdown recorded for this run")
    return
  print(f"   XLA at {bd['at']['instruction']} ({bd['at']['op_name'][-80:]})")
  for k, v in bd["by_kind"].items():
    print(f"     XLA   {v / GIB:8.3f} GiB  {k}")
  for sz, kind, shape, op in bd.get("top", [])[:12]:
    print(f"       {sz / GIB:7.3f} GiB {kind:24} {shape[:60]:60} {op[-50:]}")
  made = bd.get("rematerialized") or {}
  for sz, op, shape, op_name in made.get("largest", [])[:6]:
    print(f"     remade by XLA's pass: {sz / GIB:7.3f} GiB {op:12} {shape[:50]:50} {op_name[-40:]}")


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  p.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
  p.add_argument("--grep", help="every run whose id contains this")
  p.add_argument("ids", nargs="*")
  args = p.parse_args(argv)
  with open(os.path.join(ROOT, "validation", "xla_runs.json"), encoding="utf-8") as f:
    runs = json.load(f)["runs"]
  chosen = [r for r in runs if r["id"] in args.ids or (args.grep and args.grep in r["id"])]
  for run in chosen:
    if run.get("status") in ("fits", "oom"):
      explain(run, args.remat)
  return 0 if chosen else 1


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
