#!/usr/bin/env python3
"""What is live at XLA's peak, buffer by buffer, with where each comes from.

    python3 validation/xla/peak_buffers.py DUMP_DIR [--module jit_train_step] [--top 60]

DUMP_DIR is a folder oracle.py wrote with `--dump`. XLA's live-range file
lists, for the module's flattened schedule (while bodies included), the
buffers live at its peak instruction; this script joins each with its
instruction in the optimized HLO: its shape, the JAX operation that made it
(`op_name` metadata: `jit(train_step)/jvp()/...` is forward,
`transpose(jvp())` backward, `state[...]` an argument) and the innermost
MaxText source line of its stack frame. It prints them largest first, with
the peak's instruction and the totals by kind, to set beside remat's
breakdown at its own peak (`remat analyze`, `remat timeline`).
"""

import argparse
import glob
import os
import re
import sys

_INSTR = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (.+?) ([a-z][\w\-]*)\(")
_META = re.compile(r'op_name="([^"]*)"')
_FRAME_ID = re.compile(r"stack_frame_id=(\d+)")
_LIVE = re.compile(r"^\s+([\w.\-]+)\{([0-9,]*)\}: (\d+) bytes")


def _read(folder, module, suffix):
  files = sorted(glob.glob(os.path.join(folder, f"*{module}*{suffix}")))
  if not files:
    raise SystemExit(f"peak_buffers.py: no *{module}*{suffix} in {folder}")
  with open(files[0], encoding="utf-8", errors="replace") as f:
    return f.read()


def _tables(hlo):
  """Stack frames of the HLO's tail tables: frame id -> (file, function, line, parent)."""
  sections, current = {}, None
  for line in hlo.splitlines():
    if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
      current = sections.setdefault(line, {})
      continue
    if current is None or not line or not line[0].isdigit():
      continue
    key, _, rest = line.partition(" ")
    current[int(key)] = rest
  files = {k: v.strip('"') for k, v in sections.get("FileNames", {}).items()}
  funcs = {k: v.strip('"') for k, v in sections.get("FunctionNames", {}).items()}
  locs = {}
  for k, v in sections.get("FileLocations", {}).items():
    m = re.search(r"file_name_id=(\d+) function_name_id=(\d+) line=(\d+)", v)
    if m:
      locs[k] = (files.get(int(m.group(1)), "?"), funcs.get(int(m.group(2)), "?"), int(m.group(3)))
  frames = {}
  for k, v in sections.get("StackFrames", {}).items():
    m = re.search(r"file_location_id=(\d+) parent_frame_id=(\d+)", v)
    if m:
      frames[k] = (locs.get(int(m.group(1))), int(m.group(2)))
  return frames


def _source(frames, fid):
  """The innermost MaxText frame of a stack, as 'path:line function'."""
  seen = set()
  while fid in frames and fid not in seen:
    seen.add(fid)
    loc, parent = frames[fid]
    if loc and "/maxtext/" in loc[0] and "/trainers/" not in loc[0]:
      path = loc[0].split("/maxtext/", 1)[1]
      return f"{path}:{loc[2]} {loc[1]}"
    if parent == fid:
      break
    fid = parent
  return ""


def _instructions(hlo):
  out = {}
  for line in hlo.splitlines():
    m = _INSTR.match(line)
    if not m:
      continue
    meta = _META.search(line)
    fid = _FRAME_ID.search(line)
    out[m.group(1)] = (m.group(2), m.group(3), meta.group(1) if meta else "", int(fid.group(1)) if fid else 0)
  return out


def _kind(op_name, name):
  if op_name.startswith("state") or name.startswith("param") or name.startswith("wide.param"):
    return "arguments (params, optimizer state)"
  if "transpose(jvp())" in op_name:
    return "backward"
  if "jvp()" in op_name:
    return "forward"
  return "other (copies, collectives, fusions without a JAX op)"


def peak_buffers(folder, module="jit_train_step"):
  live = _read(folder, module, "after_optimizations-live-range.txt")
  hlo = _read(folder, module, "after_optimizations.txt")
  m = re.search(r"Live ranges at (\d+) \(peak\):\n(.*?)\n\s*Stack trace", live, re.S)
  if not m:
    raise SystemExit("peak_buffers.py: the live-range file has no peak section")
  seq = dict(re.findall(r"^\s+(\d+):(\S+)$", live[: m.start()], re.M))
  instrs, frames = _instructions(hlo), _tables(hlo)
  rows = []
  for line in m.group(2).splitlines():
    b = _LIVE.match(line)
    if not b:
      continue
    name, index, size = b.group(1), b.group(2), int(b.group(3))
    shape, opcode, op_name, fid = instrs.get(name, ("?", "?", "", 0))
    rows.append({
        "buffer": f"{name}{{{index}}}",
        "bytes": size,
        "shape": shape if len(shape) < 90 else shape[:87] + "...",
        "opcode": opcode,
        "op_name": op_name,
        "source": _source(frames, fid),
        "kind": _kind(op_name, name),
    })
  rows.sort(key=lambda r: -r["bytes"])
  return seq.get(m.group(1), "?"), int(m.group(1)), rows


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  p.add_argument("dump")
  p.add_argument("--module", default="jit_train_step")
  p.add_argument("--top", type=int, default=60)
  args = p.parse_args(argv)
  at, index, rows = peak_buffers(args.dump, args.module)
  total = sum(r["bytes"] for r in rows)
  print(f"peak at instruction {index} ({at}): {total} bytes in {len(rows)} buffers")
  kinds = {}
  for r in rows:
    kinds[r["kind"]] = kinds.get(r["kind"], 0) + r["bytes"]
  for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]):
    print(f"  {v:>14} {v / 2**30:8.3f} GiB  {k}")
  print()
  for r in rows[: args.top]:
    print(f"{r['bytes']:>12} {r['buffer'][:34]:34} {r['shape'][:60]:60} {r['op_name'][-60:]:60} {r['source']}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
