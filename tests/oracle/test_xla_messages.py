"""The harness's reading of XLA's messages (validation/xla/xla_messages.py),
on the sentences libtpu prints: an HBM OOM in both wordings, a host-memory
refusal inside a proto's repr (its line breaks escaped), and a failure that
is neither. Needs only the standard library: CI runs it without libtpu.
usage: python3 test_xla_messages.py SOURCE_DIR"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "validation", "xla"))
import xla_messages  # pylint: disable=wrong-import-position

G = 1 << 30

HBM = ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. "
       "Used 16.24G of 15.75G hbm. Exceeded hbm capacity by 503.6M.\n\nTotal hbm usage >= 16.74G:\n")
TEMPS = "the total memory required for HLO temporaries (15.91G) exceeds available HBM (15.75G)."
HOST = ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: [type.googleapis.com/tensorflow.tpu."
        "CompilationResultProto='\\x08\\x08\\x12\\xa5\\x0eRan out of memory in memory space host. "
        "Used 152.00G of 128.00G host. Exceeded host capacity by 24.00G.\\n\\nProgram host requi...[truncated]']")


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
  print("xla_messages: 4 messages read as XLA printed them")


if __name__ == "__main__":
  main()
