#!/usr/bin/env python3
"""XLA's live bytes over the step, from its dump, to set beside `remat timeline`.

    python3 validation/xla/xla_timeline.py DUMP_DIR [--points 48] [--at INDEX]

Joins the live-range file's buffer ranges (over the module's flattened
schedule: while bodies are listed once, where the loop runs) with the
buffer sizes of the buffer assignment, and prints the live bytes at evenly
spaced points of the schedule with the op running there (forward layers,
the head, backward layers...), the maximum with the buffers that make it,
and the arguments' share. `--at INDEX` lists the buffers live at one
point instead. A while loop's body runs many times but appears once, so
each scanned layer's working set is seen once, on top of what the loop
carries. Values the assignment puts in one place (the same allocation and
offset) whose ranges meet are one buffer: an output written over an operand
that dies there (an elementwise fusion's in place) is counted once.
"""

import argparse
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peak_buffers  # pylint: disable=wrong-import-position

_RANGE = re.compile(r"^\s+([\w.\-]+)\{([0-9,]*)\}:(\d+)-(\d+)$")
_VALUE = re.compile(r"value: <\d+ ([\w.\-]+)(\{[0-9,]*\})?(?: \([a-z]+\))? @\d+> \(size=(\d+),offset=(\d+)\)")


def _read(folder, suffix, module="jit_train_step"):
  files = sorted(glob.glob(os.path.join(folder, f"*{module}*{suffix}")))
  if not files:
    raise SystemExit(f"xla_timeline.py: no *{module}*{suffix} in {folder}")
  with open(files[0], encoding="utf-8", errors="replace") as f:
    return f.read()


def load(folder):
  """(sequence names, {buffer: (start, end, bytes)}) of the dump's train step,
  values sharing a place in the assignment merged where their ranges meet
  (the merged buffer is named by its first value)."""
  live = _read(folder, "after_optimizations-live-range.txt")
  assign = _read(folder, "after_optimizations-buffer-assignment.txt")
  sizes, place, alloc = {}, {}, None
  for line in assign.splitlines():
    if line.startswith("allocation "):
      alloc = line.split(":", 1)[0]
      continue
    m = _VALUE.search(line)
    if m:
      key = f"{m.group(1)}{m.group(2) or '{}'}"
      sizes[key] = int(m.group(3))
      place[key] = (alloc, int(m.group(4)))
  seq = [name for _, name in sorted((int(i), n) for i, n in re.findall(r"^\s+(\d+):(\S+)$", live.split("BufferLiveRange:")[0], re.M))]
  raw = {}
  for line in live.split("BufferLiveRange:", 1)[1].split("Live ranges at", 1)[0].splitlines():
    m = _RANGE.match(line)
    if m:
      key = f"{m.group(1)}{{{m.group(2)}}}"
      raw[key] = (int(m.group(3)), int(m.group(4)), sizes.get(key, 0))
  return seq, merge_shared(raw, place)


def merge_shared(raw, place):
  """One range per run of values in one place whose ranges overlap or meet."""
  by_place, out = {}, {}
  for key, r in raw.items():
    by_place.setdefault(place.get(key, ("", key)), []).append((r[0], r[1], r[2], key))
  for runs in by_place.values():
    runs.sort()
    start, end, size, name = runs[0]
    for s, e, z, k in runs[1:]:
      if s <= end:
        end, size = max(end, e), max(size, z)
        continue
      out[name] = (start, end, size)
      start, end, size, name = s, e, z, k
    out[name] = (start, end, size)
  return out


def curve(seq, ranges):
  n = len(seq)
  delta = [0] * (n + 2)
  for start, end, size in ranges.values():
    delta[start] += size
    delta[min(end, n) + 1] -= size
  out, acc = [], 0
  for i in range(n):
    acc += delta[i]
    out.append(acc)
  return out


def main(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
  p.add_argument("dump")
  p.add_argument("--points", type=int, default=48)
  p.add_argument("--at", type=int)
  p.add_argument("--top", type=int, default=25)
  args = p.parse_args(argv)
  seq, ranges = load(args.dump)
  instrs = peak_buffers._instructions(_read(args.dump, "after_optimizations.txt"))  # pylint: disable=protected-access
  live = curve(seq, ranges)
  if args.at is None:
    step = max(1, len(seq) // args.points)
    for i in range(0, len(seq), step):
      name = seq[i]
      op = instrs.get(name, ("", "", "", 0))[2]
      print(f"{i:6d} {live[i] / 2**30:8.3f} GiB  {name[:40]:40} {op[-70:]}")
    i = max(range(len(live)), key=live.__getitem__)
    print(f"\nmax {live[i]} bytes ({live[i] / 2**30:.3f} GiB) at {i} ({seq[i]})")
  else:
    i = args.at
  rows = sorted(((size, name) for name, (s, e, size) in ranges.items() if s <= i <= e), reverse=True)
  print(f"live at {i} ({seq[i]}): {sum(r[0] for r in rows)} bytes")
  for size, name in rows[: args.top]:
    base = name.split("{")[0]
    shape, _, op, _ = instrs.get(base, ("?", "", "", 0))
    print(f"  {size:>12} {name[:36]:36} {shape[:56]:56} {op[-60:]}")
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
