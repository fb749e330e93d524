#!/usr/bin/env python3
"""Grow the compiled corpus: plan runs from the cases, compile what is missing.

    corpus.py plan   [--remat BIN]          cases -> validation/xla/plan.json
    corpus.py refine [--remat BIN]          more runs where XLA's figures left a case far from its limit
    corpus.py grow   [--jobs 2] [--maxtext SRC] [--limit N] [--only REGEX] [--again REGEX] [--log FILE]
                     [--timeout SECONDS]
    corpus.py limits [--maxtext SRC]        XLA's limit per chip (limits.py) into the corpus
    corpus.py status                        what the corpus covers

`plan` is deterministic and is committed: a run's settings never change once
planned (remat's predictions only choose them), so a later session resumes
the same corpus. `grow` compiles the planned runs not yet in
validation/xla_runs.json, `--jobs` at a time at low priority, writing each
result as it finishes (the file is rewritten whole, atomically) and one log
line per run; stop it at any time and run it again to go on. `--only`
compiles the planned runs whose id matches a regular expression (a second
`grow` may run beside the first: each result is written under a lock on the
corpus, so neither loses the other's). `--again` also compiles again the
recorded runs whose id matches it and that were compiled before the harness
read XLA's rematerialization pass from its log (no `xla_remat`): the new
entry replaces the old one whole.
"""

import argparse
import datetime
import fcntl
import json
import math
import os
import platform
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import corpus_cases  # pylint: disable=wrong-import-position
import maxtext_args  # pylint: disable=wrong-import-position
import xla_messages  # pylint: disable=wrong-import-position

PLAN = os.path.join(HERE, "plan.json")
CORPUS = os.path.join(ROOT, "validation", "xla_runs.json")
PLAN_FORMAT = "remat-xla-plan/1"
CORPUS_FORMAT = "remat-xla-runs/1"

# per_device_batch_size candidates: fractions only where the global batch is
# a whole number of sequences (checked per slice).
BATCHES = [0.125, 0.25, 0.5] + list(range(1, 17)) + [20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 128]


def load(path, fmt, key):
  if not os.path.exists(path):
    return {"format": fmt, key: []}
  with open(path, encoding="utf-8") as f:
    data = json.load(f)
  if data.get("format") != fmt:
    raise SystemExit(f"{path}: format is {data.get('format')!r}, expected {fmt!r}")
  return data


def save(path, data):
  limits = data.get("limits", {})
  named = {}
  if os.path.exists(PLAN):
    with open(PLAN, encoding="utf-8") as f:
      named = {r["id"]: r["published_run"] for r in json.load(f)["runs"] if r.get("published_run")}
  for entry in data.get("runs", []):
    xla_messages.scrub(entry)
    if entry.get("hardware") in limits:
      entry["xla_limit_bytes"] = limits[entry["hardware"]]["limit_bytes"]
    if entry.get("id") in named:
      entry["published_run"] = named[entry["id"]]
  tmp = path + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(data, f, indent=1, sort_keys=True)
    f.write("\n")
  os.replace(tmp, path)


class Remat:
  """remat's predictions for planning: peak, static bytes, layer kinds."""

  def __init__(self, binary):
    self.binary = binary
    self.cache = {}

  def analyze(self, settings):
    key = tuple(settings)
    if key not in self.cache:
      p = subprocess.run([self.binary, "analyze", "--format", "json"] + list(settings), capture_output=True, text=True, check=False)
      self.cache[key] = json.loads(p.stdout) if p.returncode == 0 else None
    return self.cache[key]


def at_some_batch(remat, settings):
  """remat's result at the smallest candidate batch it accepts (None if none)."""
  for b in BATCHES:
    r = remat.analyze(settings + [f"per_device_batch_size={b:g}"])
    if r is not None:
      return r
  return None


def static_bytes(result):
  s = result["static"]
  return s["param_bytes"] + s["optimizer_bytes"] + s["grad_bytes"]


def kinds(result):
  return len({row["profile"] for row in result["layers"]})


def choose_layers(remat, c, base, limit):
  """The case's layer count: the model's, or 'auto' (static at most half the limit)."""
  if c["layers"] == "model":
    return None
  if isinstance(c["layers"], int):
    return c["layers"]
  full = at_some_batch(remat, base)
  if full is None:
    return None
  want = kinds(full)
  best = None
  for n in range(c["step"], full["layers_count"] + 1, c["step"]):
    r = at_some_batch(remat, base + [f"base_num_decoder_layers={n}"])
    if r is None or kinds(r) != want:
      continue
    if static_bytes(r) > 0.5 * limit:
      break
    best = n
  return best


def choose_batch(remat, settings, devices, target, figure="peak_hbm_bytes"):
  """The candidate batch whose predicted figure (remat's JSON key, the
  step's peak unless the case names another) is nearest target (log
  scale)."""
  best = None
  for b in BATCHES:
    if abs(b * devices - round(b * devices)) > 1e-9 or b * devices < 1:
      continue
    r = remat.analyze(settings + [f"per_device_batch_size={b:g}"])
    if r is None or not r.get(figure):
      continue
    miss = abs(math.log(r[figure] / target))
    if best is None or miss < best[0]:
      best = (miss, b, r["peak_hbm_bytes"])
    if r[figure] > 2 * target:
      break
  return best


def case_base(c):
  return [f"model_name={c['model']}", f"topology={c['topology']}", f"remat_policy={c['policy']}"] + c["settings"]


def run_id(c, layers, batch):
  parts = [c["topology"], c["model"], c["policy"]] + [s.replace("=", "-") for s in c["settings"]]
  if layers:
    parts.append(f"L{layers}")
  parts.append(f"b{batch:g}")
  return "_".join(parts)


def plan_case(remat, c, limits):
  profile, devices = maxtext_args.slice_of(c["topology"])
  slices = [int(s.split("=")[1]) for s in c["settings"] if s.startswith("num_slices=")]
  devices *= slices[0] if slices else 1
  limit = limits[profile]
  base = case_base(c)
  layers = choose_layers(remat, c, base, limit)
  settings = base + ([f"base_num_decoder_layers={layers}"] if layers else [])
  full = at_some_batch(remat, base)
  runs = {}
  for t in c["targets"]:
    got = choose_batch(remat, settings, devices, t * limit, c.get("figure", "peak_hbm_bytes"))
    if got is None:
      print(f"plan: no batch for {' '.join(settings)}", file=sys.stderr)
      continue
    _, b, peak = got
    rid = run_id(c, layers, b)
    runs.setdefault(rid, {
        "id": rid,
        "settings": settings + [f"per_device_batch_size={b:g}"],
        "target": t,
        "planned_remat_ratio": round(peak / limit, 4),
        "published_layers": full["layers_count"] if full else None,
        "compiled_layers": layers or (full["layers_count"] if full else None),
    })
  return list(runs.values())


def limits_of(corpus):
  lim = {k: v["limit_bytes"] for k, v in corpus.get("limits", {}).items()}
  if len(lim) < 5:
    raise SystemExit("corpus.py: the corpus has no XLA limits yet: run `corpus.py limits` first")
  return lim


def cmd_plan(args):
  remat = Remat(args.remat)
  corpus = load(CORPUS, CORPUS_FORMAT, "runs")
  limits = limits_of(corpus)
  plan = load(PLAN, PLAN_FORMAT, "runs")
  have = {r["id"] for r in plan["runs"]}
  added = 0
  planned = [r for c in corpus_cases.CASES for r in plan_case(remat, c, limits)]
  runs_json = os.path.join(ROOT, "validation", "runs.json")
  manual = {rid: settings for rid, settings in corpus_cases.PUBLISHED}
  for rid, settings, run in corpus_cases.published_runs(runs_json):
    planned.append({"id": rid, "settings": settings or manual[rid], "target": None, "published": True,
                    "published_run": run})
  changed = []
  for r in planned:
    if r["id"] not in have:
      plan["runs"].append(r)
      have.add(r["id"])
      added += 1
    elif r.get("published_run"):
      # a run planned before it named its published run, or whose settings
      # validation/runs.json has changed since (a key remat models now):
      # the plan follows the published run's settings
      old = next(p for p in plan["runs"] if p["id"] == r["id"])
      old["published_run"] = r["published_run"]
      if old["settings"] != r["settings"]:
        old["settings"] = r["settings"]
        changed.append(r["id"])
  save(PLAN, plan)
  print(f"plan: {added} runs added, {len(plan['runs'])} planned")
  for rid in changed:
    print(f"plan: {rid}: settings follow validation/runs.json now; `corpus.py forget {rid}` compiles it again")
  return 0


def host():
  mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
  return {"cpus": os.cpu_count(), "memory_bytes": mem, "machine": platform.machine(), "python": platform.python_version()}


def order(pending):
  """Round-robin over the chips, so that every chip gains runs from the
  start, TPU7x one slot in six (its compiles take several times as long:
  two devices a chip, and XLA retries near its limit); within a chip, the
  runs remat disagreed with first, then the published runs, then the
  cases."""
  def rank(r):
    return 0 if r.get("published") and not r.get("published_run", "").startswith(("v", "t")) else \
        (1 if r.get("published") else 2)
  by_chip = {}
  for r in sorted(pending, key=rank):
    by_chip.setdefault(maxtext_args.translate(r["settings"]).hardware, []).append(r)
  slow = by_chip.pop("tpu7x", [])
  out, turn = [], 0
  while any(by_chip.values()) or slow:
    for chip in sorted(by_chip):
      if by_chip[chip]:
        out.append(by_chip[chip].pop(0))
        turn += 1
        if turn % 5 == 0 and slow:
          out.append(slow.pop(0))
    if not any(by_chip.values()):
      out += slow
      slow = []
  return out


def compile_one(args, run):
  cmd = [sys.executable, os.path.join(HERE, "oracle.py")]
  if args.maxtext:
    cmd += ["--maxtext", args.maxtext]
  if getattr(args, "timeout", None):
    cmd += ["--timeout", str(args.timeout)]
  cmd += run["settings"]
  p = subprocess.run(cmd, capture_output=True, text=True, check=False)
  try:
    entry = json.loads(p.stdout)
  except json.JSONDecodeError:
    entry = {"status": "error", "fits": None, "error": (p.stderr or p.stdout)[-2000:], "settings": run["settings"]}
  for k in ("id", "target", "planned_remat_ratio", "published_layers", "compiled_layers", "published",
            "published_run"):
    entry[k] = run.get(k)
  entry["host"] = host()
  entry["finished"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
  return entry


def cmd_grow(args):
  plan = load(PLAN, PLAN_FORMAT, "runs")
  corpus = load(CORPUS, CORPUS_FORMAT, "runs")
  done = {r["id"] for r in corpus["runs"]}
  only = re.compile(args.only) if args.only else None
  again = re.compile(args.again) if args.again else None
  stale = {r["id"] for r in corpus["runs"] if again and again.search(r["id"]) and "xla_remat" not in r
           and r.get("status") in ("fits", "oom", "host_oom")}
  pending = order([r for r in plan["runs"] if (r["id"] not in done and (not only or only.search(r["id"])))
                   or r["id"] in stale])
  if args.limit:
    pending = pending[: args.limit]
  lock = threading.Lock()
  log = open(args.log, "a", encoding="utf-8") if args.log else sys.stdout  # pylint: disable=consider-using-with
  t0 = time.monotonic()
  count = [0]

  def finish(run):
    entry = compile_one(args, run)
    with lock, open(CORPUS + ".lock", "a", encoding="utf-8") as held:
      fcntl.flock(held, fcntl.LOCK_EX)  # another grow's read-modify-write waits: none is lost
      data = load(CORPUS, CORPUS_FORMAT, "runs")
      data["runs"] = [r for r in data["runs"] if r.get("id") != entry["id"]] + [entry]
      data["runs"].sort(key=lambda r: r["id"])
      save(CORPUS, data)
      count[0] += 1
      lim = data.get("limits", {}).get(entry.get("hardware"), {}).get("limit_bytes")
      ratio = f"{entry['xla_peak_bytes'] / lim:.3f}" if lim and entry.get("xla_peak_bytes") else "-"
      log.write(
          f"{time.strftime('%H:%M:%S')} {count[0]}/{len(pending)} {entry['status']:5s} xla/limit {ratio} "
          f"{entry.get('wall_seconds', 0):.0f}s {entry['id']}"
          + (f" ({entry.get('error', '')[:160]})" if entry["status"] == "error" else "")
          + "\n"
      )
      log.flush()

  with ThreadPoolExecutor(max_workers=args.jobs) as pool:
    list(pool.map(finish, pending))
  log.write(f"grow: {count[0]} runs in {time.monotonic() - t0:.0f} s\n")
  return 0


def setting(run, key, default=""):
  for s in reversed(run["settings"]):
    k, _, v = s.partition("=")
    if k == key:
      return v
  return default


def cmd_status(args):
  """What the corpus covers: runs by chip and outcome, the share near the
  limit, the knobs turned, and what the compiles cost."""
  del args
  corpus = load(CORPUS, CORPUS_FORMAT, "runs")
  plan = load(PLAN, PLAN_FORMAT, "runs")
  runs = [r for r in corpus["runs"] if r.get("status") in ("fits", "oom")]
  host = sum(r.get("status") == "host_oom" for r in corpus["runs"])
  near = [r for r in runs if 0.85 <= r["xla_peak_bytes"] / r["xla_limit_bytes"] <= 1.15]
  print(f"{len(runs)} compiled runs ({sum(not r['fits'] for r in runs)} rejected by XLA, {len(near)} "
        f"within 85-115% of the limit), {host} refused by XLA for host memory, "
        f"{len(corpus['runs']) - len(runs) - host} errors, "
        f"{len(plan['runs']) - len(corpus['runs'])} planned runs to go")
  for key, name in (("hardware", "chip"), ("model_name", "model"), ("remat_policy", "policy")):
    counts = {}
    for r in runs:
      v = r[key] if key == "hardware" else setting(r, key, "full" if key == "remat_policy" else "")
      counts[v] = counts.get(v, 0) + 1
    print(f"  by {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
  knobs = ("ici_tensor_parallelism", "ici_expert_parallelism", "ici_context_parallelism", "ici_pipeline_parallelism",
           "num_slices", "gradient_accumulation_steps", "weight_dtype", "quantization", "num_vocab_tiling",
           "parameter_memory_host_offload", "scan_layers", "max_target_length")
  print("  knobs: " + ", ".join(f"{k} {sum(1 for r in runs if setting(r, k))}" for k in knobs))
  secs = [r["wall_seconds"] for r in corpus["runs"] if r.get("wall_seconds")]
  if secs:
    print(f"  compile wall time: {sum(secs) / 3600:.1f} h in all, median {sorted(secs)[len(secs) // 2]:.0f} s, "
          f"max {max(secs):.0f} s, on {runs[0]['host']['cpus'] if runs and runs[0].get('host') else '?'} cores")
  return 0


def cmd_forget(args):
  """Drops recorded runs (by id) so that `grow` compiles them again: for a
  record the harness has since learned to read better."""
  corpus = load(CORPUS, CORPUS_FORMAT, "runs")
  before = len(corpus["runs"])
  corpus["runs"] = [r for r in corpus["runs"] if r.get("id") not in set(args.ids)]
  save(CORPUS, corpus)
  print(f"forget: {before - len(corpus['runs'])} runs dropped")
  return 0


def cmd_rederive(args):
  """Reads XLA's peak again from what every compiled entry recorded (its
  memory_analysis and buffer-assignment breakdown), with the harness's
  current rule (xla_messages.hbm_peak), and XLA's host-memory refusals
  from the errors recorded before the harness read them
  (xla_messages.host_oom_fields): for a rule learned after the compile,
  without compiling again. Prints each entry that changes."""
  del args
  with open(CORPUS + ".lock", "a", encoding="utf-8") as held:
    fcntl.flock(held, fcntl.LOCK_EX)
    corpus = load(CORPUS, CORPUS_FORMAT, "runs")
    changed = 0
    for r in corpus["runs"]:
      host = xla_messages.host_oom_fields(r.get("error", "")) if r.get("status") == "error" else None
      if host:
        print(f"{r['id']}: error -> host_oom ({host['oom_message']})")
        for k in ("error", "output_tail"):
          r.pop(k, None)
        r.update(host)
        changed += 1
      if r.get("status") != "fits" or not r.get("memory_analysis"):
        continue
      peak, source = xla_messages.hbm_peak(r["memory_analysis"], r.get("xla_peak_breakdown") or {})
      if (peak, source) != (r.get("xla_peak_bytes"), r.get("xla_peak_source")):
        print(f"{r['id']}: {r.get('xla_peak_bytes')} ({r.get('xla_peak_source')}) -> {peak} ({source})")
        r["xla_peak_bytes"], r["xla_peak_source"] = peak, source
        changed += 1
    save(CORPUS, corpus)
  print(f"rederive: {changed} runs changed")
  return 0


def cmd_limits(args):
  cmd = [sys.executable, os.path.join(HERE, "limits.py")]
  if args.maxtext:
    cmd += ["--maxtext", args.maxtext]
  chips = ["v4-8", "v5e-8", "v5p-8", "v6e-8", "tpu7x-8"]
  p = subprocess.run(cmd + chips, capture_output=True, text=True, check=True)
  corpus = load(CORPUS, CORPUS_FORMAT, "runs")
  corpus["limits"] = json.loads(p.stdout)
  save(CORPUS, corpus)
  print(json.dumps({k: v["limit_bytes"] for k, v in corpus["limits"].items()}))
  return 0


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  sub = p.add_subparsers(dest="cmd", required=True)
  for name in ("plan", "refine"):
    s = sub.add_parser(name)
    s.add_argument("--remat", default=os.path.join(ROOT, "build", "remat"))
  s = sub.add_parser("grow")
  s.add_argument("--jobs", type=int, default=2)
  s.add_argument("--maxtext")
  s.add_argument("--limit", type=int, default=0)
  s.add_argument("--only", help="compile only the planned runs whose id matches this regular expression")
  s.add_argument("--again", help="also compile again the recorded runs whose id matches this and that have no "
                 "record of XLA's rematerialization pass")
  s.add_argument("--log")
  s.add_argument("--timeout", type=float, help="seconds before a compile is killed (oracle.py's default "
                 "1800 when not given): a loaded host compiles a large MoE model slower")
  s = sub.add_parser("limits")
  s.add_argument("--maxtext")
  s = sub.add_parser("forget")
  s.add_argument("ids", nargs="+")
  sub.add_parser("status")
  sub.add_parser("rederive")
  args = p.parse_args(argv)
  return {"plan": cmd_plan, "grow": cmd_grow, "limits": cmd_limits, "forget": cmd_forget,
          "status": cmd_status, "rederive": cmd_rederive}[args.cmd](args)


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
