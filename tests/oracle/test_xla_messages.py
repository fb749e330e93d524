"""The harness's reading of XLA's messages (validation/xla/xla_messages.py),
on the sentences libtpu prints: an HBM OOM in both wordings, a host-memory
refusal inside a proto's repr (its line breaks escaped), and a failure that
is neither. Needs only the standard library: CI runs it without libtpu.
usage: python3 test_xla_messages.py SOURCE_DIR"""
import json
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "validation", "xla"))
import xla_dump  # pylint: disable=wrong-import-position
import xla_messages  # pylint: disable=wrong-import-position

G = 1 << 30

HBM = ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. "
       "Used 16.24G of 15.75G hbm. Exceeded hbm capacity by 503.6M.\n\nTotal hbm usage >= 16.74G:\n")
TEMPS = "the total memory required for HLO temporaries (15.91G) exceeds available HBM (15.75G)."
HOST = ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: [type.googleapis.com/tensorflow.tpu."
        "CompilationResultProto='\\x08\\x08\\x12\\xa5\\x0eRan out of memory in memory space host. "
        "Used 152.00G of 128.00G host. Exceeded host capacity by 24.00G.\\n\\nProgram host requi...[truncated]']")

# libtpu's info log from two compiles of gemma2-2b on v5e-8 (batch 5 fits
# after the pass, batch 6 does not get under its limit)
REMAT_FIT = (
    "I1204 19:01:24.271324   13743 deepsea_compiler_hlo_passes.cc:5714] XLA::TPU post optimization "
    "rematerialization limit 14.86G = 95% hbm (14.96G) - (arguments (3.66G) - aliased_output(3.66G)) - "
    "overlays (102.11M)\n"
    "I1204 19:01:24.271467   13743 deepsea_compiler_hlo_passes.cc:5728] XLA::TPU rematerialization hbm "
    "reduction:  15.59G => 14.62G\n")
REMAT_SHORT = (
    "W1204 19:03:11.881768   13976 hlo_rematerialization.cc:3231] Can't reduce memory use below 14.86GiB "
    "(15956468736 bytes) by rematerialization; only reduced to 16.57GiB (17795299840 bytes), down from "
    "17.67GiB (18975537664 bytes) originally\n"
    + REMAT_FIT.replace("15.59G => 14.62G", "17.67G => 16.57G"))
SMALL_MODULE = (
    "I1204 19:00:01.000000   13743 deepsea_compiler_hlo_passes.cc:5714] XLA::TPU post optimization "
    "rematerialization limit 14.90G = 95% hbm (14.96G) - (arguments (0B) - aliased_output(0B)) - overlays (1M)\n"
    "I1204 19:00:01.000001   13743 deepsea_compiler_hlo_passes.cc:5728] XLA::TPU rematerialization hbm "
    "reduction:  15.00G => 14.00G\n")


LHS = (
    "I1204 19:01:23.848768   13743 latency_hiding_scheduler.cc:4299] LatencyHidingScheduler current memory "
    "usage: 12810567168 bytes, does not fit in initial limit: 12031262208. Setting the new limit to 10828135987\n"
    "I1204 19:01:23.904926   13743 latency_hiding_scheduler.cc:4325] [latency-hiding-scheduler] "
    "LatencyHidingScheduler current memory usage: 12810567168 bytes. Current limit: 10828135987\n")


def check_scheduler():
  lhs = xla_messages.parse_scheduler(LHS)
  assert lhs == {"missed": True, "usage_bytes": 12810567168, "limit_bytes": 12031262208,
                 "retry_limit_bytes": 10828135987, "retry_usage_bytes": 12810567168}, lhs
  assert xla_messages.parse_scheduler(REMAT_FIT) is None
  on = {"memory_analysis": {"peak_memory_in_bytes": 1}, "env": {"TPU_MIN_LOG_LEVEL": "0"}}
  assert xla_messages.outcome(on, 0, LHS)["xla_scheduler"]["usage_bytes"] == 12810567168
  assert xla_messages.outcome(on, 0, "")["xla_scheduler"] == {"missed": False}


def check_rematerialized():
  """The pass's instructions by their .remat suffix: a value's largest
  buffer counts (a tuple's elements are values of their own), and an
  instruction without the suffix (fusion.12) or with it mid-name is not."""
  instrs = {
      "all-gather.368.remat": ("bf16[256128,2304]", "all-gather", "jit(train_step)/transpose(jvp())/dot_general"),
      "fusion.12.remat2": ("(f32[5,2048], bf16[5,2048,4096])", "fusion", "rematted_computation/dot_general"),
      "fusion.12": ("bf16[5,2048,4096]", "fusion", ""),
      "copy.remat.7": ("bf16[4]", "copy", ""),
  }
  vals = {
      "all-gather.368.remat{}": (1, 0, 1180237824, False, 0),
      "fusion.12.remat2{0}": (2, 0, 40960, False, 0),
      "fusion.12.remat2{1}": (2, 40960, 83886080, False, 0),
      "fusion.12{}": (3, 0, 83886080, False, 0),
  }
  made = xla_dump.rematerialized(instrs, vals)
  assert made["count"] == 2, made
  assert made["by_opcode"] == {"all-gather": [1, 1180237824], "fusion": [1, 83886080]}, made
  assert made["largest"][0][:2] == [1180237824, "all-gather"], made


def check_remat():
  fit = xla_messages.parse_remat(REMAT_FIT)
  assert fit == {"needed": True, "limit_bytes": int(round(14.86 * G)), "limit_percent": 95,
                 "before_bytes": int(round(15.59 * G)), "after_bytes": int(round(14.62 * G)), "exact": False,
                 "reached": True}, fit
  short = xla_messages.parse_remat(SMALL_MODULE + REMAT_SHORT)
  assert short == {"needed": True, "limit_bytes": 15956468736, "limit_percent": 95,
                   "before_bytes": 18975537664, "after_bytes": 17795299840, "exact": True,
                   "reached": False}, short
  assert xla_messages.parse_remat(HBM) is None
  on = {"memory_analysis": {"peak_memory_in_bytes": 1}, "env": {"TPU_MIN_LOG_LEVEL": "0"}}
  assert xla_messages.outcome(on, 0, REMAT_FIT)["xla_remat"]["before_bytes"] == int(round(15.59 * G))
  assert xla_messages.outcome(on, 0, "")["xla_remat"] == {"needed": False}
  assert "xla_remat" not in xla_messages.outcome(dict(on, env={}), 0, REMAT_FIT), "log off: nothing said"


def main():
  used, limit, over, line = xla_messages.parse_oom(HBM)
  assert (used, limit, over) == (int(round(16.24 * G)), int(round(15.75 * G)), int(round(503.6 * (1 << 20))))
  assert line.startswith("RESOURCE_EXHAUSTED") and line.endswith("503.6M."), line
  assert xla_messages.parse_oom(TEMPS)[:3] == (int(round(15.91 * G)), int(round(15.75 * G)), None)
  assert xla_messages.parse_oom(HOST) is None, "a host refusal is not an HBM figure"
  assert xla_messages.host_oom_fields(HBM) is None

  fields = xla_messages.host_oom_fields(HOST)
  assert fields == {
      "status": "host_oom", "fits": False, "xla_host_used_bytes": 152 * G, "xla_host_limit_bytes": 128 * G,
      "xla_host_exceeded_by_bytes": 24 * G,
      "oom_message": "Ran out of memory in memory space host. Used 152.00G of 128.00G host. "
                     "Exceeded host capacity by 24.00G."}, fields

  entry = xla_messages.outcome({"error": HOST, "compile_seconds": 9.5}, 0, "")
  assert entry["status"] == "host_oom" and entry["fits"] is False and "xla_peak_bytes" not in entry, entry
  entry = xla_messages.outcome({"error": HBM}, 0, "")
  assert entry["status"] == "oom" and entry["xla_peak_bytes"] == int(round(16.24 * G)), entry
  entry = xla_messages.outcome({"error": "ValueError: bad mesh"}, 1, "")
  assert entry["status"] == "error" and entry["fits"] is None and entry["error"] == "ValueError: bad mesh"
  entry = xla_messages.outcome(None, None, "")
  assert entry["status"] == "error" and entry["error"] == "timed out"
  # scrubbed at every save: a second scrub changes nothing, and the runs of
  # MAXTEXT_SRC earlier saves stacked up are taken back to one
  entry = {"output_tail": ["in /home/u/maxtext/src/maxtext/configs/x.py", "maxtextMAXTEXT_SRCMAXTEXT_SRC/src/maxtext/a"],
           "error": "File /opt/venv/lib/python3.11/site-packages/jax/x.py"}
  once = xla_messages.scrub(json.loads(json.dumps(entry)))
  assert once["output_tail"] == ["in MAXTEXT_SRC/src/maxtext/configs/x.py", "maxtextMAXTEXT_SRC/src/maxtext/a"], once
  assert once["error"] == "File site-packages/jax/x.py", once
  assert xla_messages.scrub(json.loads(json.dumps(once))) == once
  check_remat()
  check_scheduler()
  check_rematerialized()
  print("xla_messages: 4 messages and the rematerialization pass's log read as XLA printed them, and the scheduler's")


if __name__ == "__main__":
  main()
