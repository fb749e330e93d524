"""XLA's verdict from a compile: its figures when it fits, its OOM message when not.

XLA:TPU refuses a program that does not fit at compile time with
RESOURCE_EXHAUSTED and one of two sentences (libtpu's wording changed):
  "Ran out of memory in memory space hbm. Used 16.24G of 15.75G hbm.
   Exceeded hbm capacity by 503.6M."
  "the total memory required for HLO temporaries (15.91G) exceeds available
   HBM (15.75G)."
Sizes are printed with binary prefixes (K, M, G, T) and rounded; the used
figure is the same quantity as memory_analysis().peak_memory_in_bytes of a
program that fits (docs/validation.md). A step that offloads to host can
also be refused for host memory, in the same words for memory space host
("Used 190.00G of 128.00G host."): XLA's verdict, with no HBM figure.

With libtpu's info log on (TPU_MIN_LOG_LEVEL=0, which the harness sets),
the compile also says what XLA's rematerialization pass did. The pass runs
when the step's peak is over its own limit, 95% of the HBM less the
arguments not aliased to outputs and less the program's overlays:
  "XLA::TPU post optimization rematerialization limit 14.86G = 95% hbm
   (14.96G) - (arguments (3.66G) - aliased_output(3.66G)) - overlays (102.11M)"
  "XLA::TPU rematerialization hbm reduction:  15.59G => 14.62G"
and where it cannot get under that limit, in exact bytes:
  "Can't reduce memory use below 14.86GiB (15956468736 bytes) by
   rematerialization; only reduced to 16.57GiB (17795299840 bytes), down
   from 17.67GiB (18975537664 bytes) originally"
The figure before the pass is XLA's schedule of the step as written, the
one remat simulates; the figure after it is the peak XLA reports. Before
it, the latency-hiding scheduler has the same target (its bytes leave the
arguments out) and says when its first schedule missed it:
  "LatencyHidingScheduler current memory usage: 12810567168 bytes, does
   not fit in initial limit: 12031262208. Setting the new limit to ..."
  "[latency-hiding-scheduler] LatencyHidingScheduler current memory usage:
   12810567168 bytes. Current limit: 10828135987"
(the second line is its usage after scheduling again to the new limit).
"""

import re

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = r"([0-9]+(?:\.[0-9]+)?)([KMGT]?)B?"
_USED = re.compile(r"Used " + _SIZE + r" of " + _SIZE + r" hbm")
_TEMPS = re.compile(r"HLO temporaries \(" + _SIZE + r"\) exceeds available HBM \(" + _SIZE + r"\)")
_OVER = re.compile(r"Exceeded hbm capacity by " + _SIZE)
_HOST_USED = re.compile(r"Ran out of memory in memory space host\. Used " + _SIZE + r" of " + _SIZE + r" host\.")
_HOST_OVER = re.compile(r"Exceeded host capacity by " + _SIZE + r"\.")


_REMAT_LIMIT = re.compile(r"rematerialization limit " + _SIZE + r" = ([0-9]+)% hbm")
_REMAT_REDUCTION = re.compile(r"rematerialization hbm reduction:\s+" + _SIZE + r" => " + _SIZE)
_REMAT_SHORT = re.compile(r"Can't reduce memory use below \S+ \(([0-9]+) bytes\) by rematerialization; only "
                          r"reduced to \S+ \(([0-9]+) bytes\), down from \S+ \(([0-9]+) bytes\) originally")


_LHS_MISS = re.compile(r"LatencyHidingScheduler current memory usage: ([0-9]+) bytes, does not fit in initial "
                       r"limit: ([0-9]+)\. Setting the new limit to ([0-9]+)")
_LHS_AGAIN = re.compile(r"\[latency-hiding-scheduler\] LatencyHidingScheduler current memory usage: ([0-9]+) "
                        r"bytes\. Current limit: ([0-9]+)")


def size_bytes(number, unit):
  """Bytes of a printed size: '15.75', 'G' -> 16911433728."""
  return int(round(float(number) * _UNITS[unit]))


def parse_oom(text):
  """(used, limit, exceeded-by or None, the message's first line) or None."""
  for pattern in (_USED, _TEMPS):
    m = pattern.search(text)
    if m:
      used = size_bytes(m.group(1), m.group(2))
      limit = size_bytes(m.group(3), m.group(4))
      over = _OVER.search(text)
      line_start = text.rfind("\n", 0, m.start()) + 1
      line_end = text.find("\n", m.end())
      line = text[line_start : line_end if line_end >= 0 else len(text)].strip()
      return used, limit, (size_bytes(over.group(1), over.group(2)) if over else None), line
  return None


def parse_remat(text):
  """What XLA's rematerialization pass did, from libtpu's info log: {'needed': True,
  'limit_bytes', 'limit_percent', 'before_bytes', 'after_bytes', 'exact', 'reached'}, or None
  where the log has no such line (the pass was not needed, or the log was
  off). Sizes from the reduction line are printed to 0.01 GiB ('exact'
  false); the pass's own warning, where it could not reach its limit, gives
  bytes, which are taken instead. With several compiled modules the one
  whose step was largest before the pass is the training step's."""
  limits = list(_REMAT_LIMIT.finditer(text))
  reductions = list(_REMAT_REDUCTION.finditer(text))
  if not limits or not reductions:
    return None
  pairs = []
  for r in reductions:
    lim = max((m for m in limits if m.start() < r.start()), key=lambda m: m.start(), default=limits[0])
    pairs.append((size_bytes(r.group(1), r.group(2)), size_bytes(r.group(3), r.group(4)), lim))
  before, after, lim = max(pairs, key=lambda p: p[0])
  out = {"limit_bytes": size_bytes(lim.group(1), lim.group(2)), "limit_percent": int(lim.group(3)),
         "before_bytes": before, "after_bytes": after, "exact": False, "needed": True}
  for m in _REMAT_SHORT.finditer(text):
    exact_before = int(m.group(3))
    if abs(exact_before - before) <= (16 << 20):  # the same pass: the printed figure is its rounding
      out.update(limit_bytes=int(m.group(1)), after_bytes=int(m.group(2)), before_bytes=exact_before, exact=True)
  out["reached"] = out["after_bytes"] <= out["limit_bytes"]
  return out


def parse_scheduler(text):
  """Whether XLA's latency-hiding scheduler missed its memory limit, from
  libtpu's info log: {'missed': True, 'usage_bytes', 'limit_bytes',
  'retry_limit_bytes', 'retry_usage_bytes'} of the largest usage it
  reported (the training step's; bytes without the arguments), or None
  where it said nothing (it met its limit, or the log was off)."""
  misses = [(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.end()) for m in _LHS_MISS.finditer(text)]
  if not misses:
    return None
  usage, limit, retry, end = max(misses)
  again = _LHS_AGAIN.search(text, end)
  return {"missed": True, "usage_bytes": usage, "limit_bytes": limit, "retry_limit_bytes": retry,
          "retry_usage_bytes": int(again.group(1)) if again else None}


def parse_host_oom(text):
  """(used, limit, exceeded-by or None, XLA's sentence) of its host-memory
  refusal, or None. The sentence is cut from the text as printed (inside a
  proto's repr, its line breaks escaped)."""
  m = _HOST_USED.search(text)
  if not m:
    return None
  over = _HOST_OVER.match(text, m.end() + 1)
  line = text[m.start() : over.end() if over else m.end()]
  return (size_bytes(m.group(1), m.group(2)), size_bytes(m.group(3), m.group(4)),
          size_bytes(over.group(1), over.group(2)) if over else None, line)


def host_oom_fields(text):
  """The entry fields of a host-memory refusal in @p text (an error the
  harness recorded), or None: status host_oom, XLA's verdict (it does not
  fit) and its host figures; no HBM peak, which XLA did not print."""
  host = parse_host_oom(text)
  if not host:
    return None
  used, limit, over, line = host
  return {"status": "host_oom", "fits": False, "xla_host_used_bytes": used,
          "xla_host_limit_bytes": limit, "xla_host_exceeded_by_bytes": over, "oom_message": line}


def oom_report(text, limit=40):
  """The lines of XLA's OOM report from 'Total hbm usage' on (its breakdown)."""
  i = text.find("Total hbm usage")
  if i < 0:
    return []
  lines = text[i:].splitlines()
  out = []
  for line in lines:
    if line.startswith("See https://") or "type.googleapis.com" in line:
      break
    out.append(line.rstrip())
  return out[:limit]


def _message_lines(err, limit=40):
  """The exception's own text (what XLA said), up to the traceback."""
  lines = []
  for l in err.splitlines():
    if l.startswith("Traceback (most recent call last)") or _FRAME.match(l):
      break
    if l.strip() and "type.googleapis.com" not in l:
      lines.append(l.rstrip())
  return lines[:limit]


_FRAME = re.compile(r'^\s+File "')
_SITE = re.compile(r'(?:/[^\s"\']+)?/site-packages/')
# a path to MaxText's sources, but not one already written as MAXTEXT_SRC
# (an entry is scrubbed at every save: the same text must come out), and
# any run of MAXTEXT_SRC that saves before this rule stacked up
_SRC = re.compile(r'(?:MAXTEXT_SRC)+/src/maxtext/|(?<!MAXTEXT_SRC)(?:/[^\s"\']+)?/src/maxtext/')


def scrub(entry):
  """An entry without the paths of the machine that compiled it: XLA's
  report stops at the first traceback frame, and a path in the output's
  tail keeps only what follows site-packages/ or MaxText's src/."""
  if entry.get("oom_report"):
    entry["oom_report"] = _message_lines("\n".join(entry["oom_report"]))
  for key in ("output_tail",):
    if entry.get(key):
      entry[key] = [_SRC.sub("MAXTEXT_SRC/src/maxtext/", _SITE.sub("site-packages/", l)) for l in entry[key]]
  if entry.get("maxtext_command"):
    entry["maxtext_command"] = entry["maxtext_command"].replace("=/tmp/remat-oracle", "=remat-oracle-output")
  if entry.get("error"):
    entry["error"] = _SRC.sub("MAXTEXT_SRC/src/maxtext/", _SITE.sub("site-packages/", entry["error"]))
  return entry


_INFO = re.compile(r"^I[0-9]{4} ")


def _tail(out, n=30):
  """The output's last lines, without libtpu's info log (machine details,
  progress) and its complaint about worker hostnames."""
  lines = [l for l in out.splitlines() if "unexpected worker hostname" not in l and not _INFO.match(l)]
  return lines[-n:]


HOST_FIELDS = ("host_argument_size_in_bytes", "host_temp_size_in_bytes", "host_output_size_in_bytes")


def hbm_peak(ma, breakdown):
  """(XLA's HBM peak, where it comes from). memory_analysis's peak is HBM's
  unless the step holds host memory: then host bytes are in it too (host
  temporaries: the larger of the two peaks; host-offloaded parameters,
  which are host arguments: the HBM peak plus them, 1.08 of the limit for
  a v5e-16 step that compiles), and the HBM peak is the one rebuilt from
  the buffer assignment's HBM allocations (xla_dump.py), which equals
  peak_memory_in_bytes to 0.01% on every step without host memory."""
  if any(ma.get(k, 0) > 0 for k in HOST_FIELDS) and breakdown.get("reconstructed_peak_bytes"):
    return breakdown["reconstructed_peak_bytes"], "hbm_rebuilt_from_buffer_assignment"
  return ma["peak_memory_in_bytes"], "memory_analysis"


def outcome(record, rc, out):
  """The entry's verdict fields from the child's record, exit code and output."""
  if record is None:
    why = "timed out" if rc is None else f"the compile process exited with {rc} and wrote no record"
    return {"status": "error", "fits": None, "error": why, "output_tail": _tail(out)}
  entry = {k: record[k] for k in ("versions", "env", "compile_seconds") if k in record}
  if (record.get("env") or {}).get("TPU_MIN_LOG_LEVEL") == "0":
    # the info log was on: no line means the pass was not needed
    entry["xla_remat"] = parse_remat(out) or {"needed": False}
    entry["xla_scheduler"] = parse_scheduler(out) or {"missed": False}
  if record.get("breakdown"):
    entry["xla_peak_breakdown"] = record["breakdown"]
  if record.get("memory_analysis") is not None:
    ma = record["memory_analysis"]
    peak, source = hbm_peak(ma, record.get("breakdown") or {})
    entry.update(
        status="fits",
        fits=True,
        memory_analysis=ma,
        cost_analysis=record.get("cost_analysis"),
        xla_peak_bytes=peak,
        xla_peak_source=source,
    )
    return entry
  err = record.get("error", "")
  oom = parse_oom(err) if "RESOURCE_EXHAUSTED" in err or "memory" in err.lower() else None
  if oom:
    used, limit, over, line = oom
    entry.update(
        status="oom",
        fits=False,
        xla_peak_bytes=used,
        xla_limit_printed_bytes=limit,
        xla_exceeded_by_bytes=over,
        oom_message=line,
        oom_report=oom_report(err) or _message_lines(err),
    )
    return scrub(entry)
  host = host_oom_fields(err)
  if host:
    entry.update(host)
    return scrub(entry)
  entry.update(status="error", fits=None, error=err.strip().splitlines()[-1] if err.strip() else "", output_tail=_tail(out))
  return scrub(entry)
