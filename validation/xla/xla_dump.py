"""Evidence from XLA's dump of a compile: what is live at its peak.

With `--xla_dump_to=DIR`, XLA:TPU writes per module its optimized HLO (each
instruction with the JAX operation that made it, `op_name`), its buffer
assignment (every value's allocation, offset and size) and the live range
of every value over the flattened schedule (while bodies included).

The HBM peak is rebuilt from these: at each point of the schedule the live
values of HBM's allocations (color 0; host offload and on-chip memories
have colors of their own, reported apart) are counted once per
(allocation, offset) chunk they occupy (values
that share a chunk, as a while loop's carried state and its body's
parameter do, are one buffer). The maximum reproduces
memory_analysis().peak_memory_in_bytes (to 0.01% on the dumps checked,
docs/validation.md), so the values live there are what XLA's peak is made
of. They are grouped by what made them: the step's arguments (params,
optimizer state), the forward and backward layer scans (the backward's
re-run of a checkpointed layer apart), the scan's layer-first copy of the
weights, what the scans carry (the saved stack, the gradients), the head's
forward and backward, and the copies and collectives XLA adds.
"""

import glob
import os
import re

_ALLOC = re.compile(r"^allocation (\d+): size (\d+)(.*)$")
_VALUE = re.compile(
    r"^\s*value: <\d+ ([\w.\-]+)(\{[0-9,]*\})?(?: \([a-z]+\))? @\d+> \(size=(\d+),offset=(\d+)\)")
_RANGE = re.compile(r"^\s+([\w.\-]+)\{([0-9,]*)\}:(\d+)-(\d+)$")
_INSTR = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (.+?) ([a-z][\w\-]*)\(")
_META = re.compile(r'op_name="([^"]*)"')
_TOTAL = re.compile(r"^Total bytes: ([0-9]+)", re.MULTILINE)


def read_dump(folder, suffix, module="jit_train_step"):
  """The text of the dump file ending in @p suffix, or None."""
  files = sorted(glob.glob(os.path.join(folder, f"*{module}*{suffix}")))
  if not files:
    return None
  with open(files[0], encoding="utf-8", errors="replace") as f:
    return f.read()


def instructions(hlo):
  """{instruction: (shape, opcode, op_name)} of an HLO module's text."""
  out = {}
  for line in hlo.splitlines():
    m = _INSTR.match(line)
    if m:
      meta = _META.search(line)
      out[m.group(1)] = (m.group(2), m.group(3), meta.group(1) if meta else "")
  return out


_COLOR = re.compile(r"color (\d+)")


def values(assign):
  """{value: (allocation, offset, size, is_argument, color)} of a buffer
  assignment. An allocation's color is its memory space: 0 is HBM; host
  offload and on-chip memories have their own colors."""
  out, alloc, arg, color = {}, None, False, 0
  for line in assign.splitlines():
    m = _ALLOC.match(line)
    if m:
      alloc, arg = int(m.group(1)), "parameter" in m.group(3)
      c = _COLOR.search(m.group(3))
      color = int(c.group(1)) if c else 0
      continue
    m = _VALUE.match(line)
    if m and alloc is not None:
      out[m.group(1) + (m.group(2) or "{}")] = (alloc, int(m.group(4)), int(m.group(3)), arg, color)
  return out


def schedule(live):
  """(instruction names in schedule order, [(start, end, value)])."""
  head, _, rest = live.partition("BufferLiveRange:")
  seq = [n for _, n in sorted((int(i), n) for i, n in re.findall(r"^\s+(\d+):(\S+)$", head, re.M))]
  ranges = []
  for line in rest.split("Live ranges at", 1)[0].splitlines():
    m = _RANGE.match(line)
    if m:
      ranges.append((int(m.group(3)), int(m.group(4)), f"{m.group(1)}{{{m.group(2)}}}"))
  return seq, ranges


def live_curve(seq, ranges, vals, color=0):
  """Live bytes of memory space @p color (0: HBM) at each point, each
  (allocation, offset) chunk once; and the argmax. A chunk's size is the
  largest of the values live in it."""
  n = len(seq)
  events = [[] for _ in range(n + 2)]
  for start, end, name in ranges:
    v = vals.get(name)
    if v and v[4] == color:
      events[start].append((1, v))
      events[min(end, n) + 1].append((-1, v))
  count, size, cur, curve = {}, {}, 0, []
  for i in range(n):
    for sign, (alloc, off, sz, _, _) in events[i]:
      key = (alloc, off)
      if sign > 0:
        if count.get(key, 0) == 0:
          size[key] = sz
          cur += sz
        elif sz > size[key]:
          cur += sz - size[key]
          size[key] = sz
        count[key] = count.get(key, 0) + 1
      else:
        count[key] -= 1
        if count[key] == 0:
          cur -= size.pop(key)
    curve.append(cur)
  best = max(range(n), key=curve.__getitem__) if n else 0
  return curve, best


def kind_of(name, op_name, argument):
  """What made a value: the groups of the module docstring."""
  if argument:
    return "arguments"
  if "transpose(jvp())/while/body" in op_name:
    return "backward layer: re-run" if "rematted_computation" in op_name else "backward layer"
  if "jvp()/while/body" in op_name:
    return "forward layer"
  if "transpose(jvp())/while" in op_name:
    return "backward scan carry"
  if "jvp()/while" in op_name:
    return "forward scan output"
  if "jvp()/transpose" in op_name and "transpose(jvp())" not in op_name:
    return "scan weight copy"
  if "transpose(jvp())" in op_name:
    return "head backward"
  if "jvp(" in op_name:
    return "head forward"
  base = name.split("{")[0]
  if base.startswith("wide.param"):
    return "loop state"
  if base.startswith(("copy", "bitcast")):
    return "copies"
  if base.startswith(("all-gather", "all-reduce", "reduce-scatter", "async-collective", "collective-permute",
                      "custom-call", "all-to-all", "ragged-all-to-all")):
    return "collectives"
  return "other"


_REMADE = re.compile(r"\.remat[0-9]*$")


def rematerialized(instrs, vals, top=12):
  """What XLA's rematerialization pass made again: its instructions carry
  a `.remat` suffix (`all-gather.368.remat`, `fusion.12.remat2`). Their
  count, count and bytes per opcode, and the largest (bytes, opcode,
  shape, op_name)."""
  size = {}
  for name, (_, _, sz, _, _) in vals.items():
    base = name.split("{")[0]
    size[base] = max(size.get(base, 0), sz)
  made = [(size.get(n, 0), op, shape, op_name) for n, (shape, op, op_name) in instrs.items() if _REMADE.search(n)]
  by_op = {}
  for sz, op, _, _ in made:
    c = by_op.setdefault(op, [0, 0])
    c[0] += 1
    c[1] += sz
  return {"count": len(made), "by_opcode": dict(sorted(by_op.items(), key=lambda kv: -kv[1][1])),
          "largest": [[sz, op, shape[:80], op_name[-90:]] for sz, op, shape, op_name in sorted(made, key=lambda m: -m[0])[:top]]}


def peak_breakdown(folder, module="jit_train_step", top=24):
  """The peak rebuilt from the dump: {'reconstructed_peak_bytes', 'at',
  'by_kind', 'top', 'memory_report_total_bytes'}, or {} without a dump."""
  live = read_dump(folder, "after_optimizations-live-range.txt", module)
  assign = read_dump(folder, "after_optimizations-buffer-assignment.txt", module)
  hlo = read_dump(folder, "after_optimizations.txt", module)
  out = {}
  report = read_dump(folder, "after_optimizations-memory-usage-report.txt", module)
  if report:
    m = _TOTAL.search(report[:4096])
    if m:
      out["memory_report_total_bytes"] = int(m.group(1))
  if not (live and assign and hlo):
    return out
  vals, instrs = values(assign), instructions(hlo)
  seq, ranges = schedule(live)
  if not seq:
    return out
  curve, at = live_curve(seq, ranges, vals)
  others = sorted({v[4] for v in vals.values()} - {0})
  chunks = {}
  for start, end, name in ranges:
    if start <= at <= end and name in vals and vals[name][4] == 0:
      alloc, off, sz, arg, _ = vals[name]
      op_name = instrs.get(name.split("{")[0], ("", "", ""))[2]
      shape = instrs.get(name.split("{")[0], ("?", "", ""))[0]
      if sz > chunks.get((alloc, off), (0,))[0]:
        chunks[(alloc, off)] = (sz, kind_of(name, op_name, arg), shape, op_name)
  by_kind = {}
  for sz, kind, _, _ in chunks.values():
    by_kind[kind] = by_kind.get(kind, 0) + sz
  biggest = sorted(chunks.values(), key=lambda c: -c[0])[:top]
  at_op = instrs.get(seq[at], ("", "", ""))[2]
  for color in others:
    other_curve, other_at = live_curve(seq, ranges, vals, color)
    out.setdefault("other_memory_spaces", {})[str(color)] = other_curve[other_at] if other_curve else 0
  out.update(
      reconstructed_peak_bytes=curve[at],
      at={"index": at, "instruction": seq[at], "op_name": at_op},
      by_kind=dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
      top=[[sz, kind, shape[:80], op[-90:]] for sz, kind, shape, op in biggest if not kind == "arguments"],
      rematerialized=rematerialized(instrs, vals),
  )
  return out
