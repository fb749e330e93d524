"""Evidence from XLA's dump of a compile: what is live at its peak.

With `--xla_dump_to=DIR`, XLA:TPU writes, per module, a live-range file that
ends with the buffers live at the program's peak and a "Stack trace
breakdown for peak usage": a tree of the JAX source paths (state['params'],
state['optimizer'], jit(train_step)/jvp()/... for activations) with the
bytes each holds at that moment; and a memory-usage report whose first line
is the module's total. The record keeps the tree's first level (what the
bytes at the peak are) and both totals, to set against remat's breakdown at
its own peak. The full dump stays in DIR when the user asks for it.
"""

import glob
import os
import re

# A first-level node of the tree: six spaces, then its branch.
_NODE = re.compile(r"^      [├└]── (.*) \(([0-9.]+)%, total: ([0-9 ]+) bytes")
_BREAKDOWN = re.compile(r"Stack trace breakdown for peak usage: ([0-9 ]+) bytes")
_TOTAL = re.compile(r"^Total bytes: ([0-9]+)", re.MULTILINE)


def _group(name):
  """A state leaf's group: its path up to the 4th subscript (which moment of
  which optimizer, or the params), so per-weight leaves add up by kind."""
  if not name.startswith("state["):
    return name
  cut = 0
  for _ in range(4):
    j = name.find("]", cut)
    if j < 0:
      return name
    cut = j + 1
  return name[:cut]


def _one(pattern, folder):
  files = sorted(glob.glob(os.path.join(folder, pattern)))
  return files[0] if files else None


def peak_breakdown(folder, module="jit_train_step", min_share=0.5, limit=40):
  """{'live_range_peak_bytes', 'memory_report_total_bytes', 'peak_top'} or {}."""
  out = {}
  live = _one(f"*{module}*after_optimizations-live-range.txt", folder)
  if live:
    with open(live, encoding="utf-8", errors="replace") as f:
      text = f.read()
    m = _BREAKDOWN.search(text)
    if m:
      out["live_range_peak_bytes"] = int(m.group(1).replace(" ", ""))
      total = out["live_range_peak_bytes"]
      groups = {}
      for line in text[m.end() :].splitlines():
        n = _NODE.match(line)
        if n:
          key = _group(n.group(1))
          groups[key] = groups.get(key, 0) + int(n.group(3).replace(" ", ""))
      top = sorted(groups.items(), key=lambda kv: -kv[1])
      out["peak_top"] = [[k, v] for k, v in top if total and 100.0 * v / total >= min_share][:limit]
  report = _one(f"*{module}*after_optimizations-memory-usage-report.txt", folder)
  if report:
    with open(report, encoding="utf-8", errors="replace") as f:
      m = _TOTAL.search(f.read(4096))
    if m:
      out["memory_report_total_bytes"] = int(m.group(1))
  return out
