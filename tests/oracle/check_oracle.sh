#!/bin/sh
# One AOT compile end to end through the compiler oracle (validation/xla):
# MaxText's train_compile for a v5e-8 slice on this host, its record's
# fields, and remat's figure for the same settings beside XLA's. Exit 77
# (skipped, saying why) where the TPU compiler or MaxText is not installed:
# CI reads the recorded corpus and never compiles.
#   REMAT_ORACLE_PYTHON  the Python with the oracle's requirements (python3)
#   REMAT_MAXTEXT_SRC    a MaxText checkout; else the installed maxtext package
# usage: check_oracle.sh REMAT SOURCE_DIR OUTDIR
REMAT=$1
SRC=$2
OUT=$3
PY=${REMAT_ORACLE_PYTHON:-python3}
if ! "$PY" -c "import jax, jaxlib, libtpu" >/dev/null 2>&1; then
    echo "skipped: $PY cannot import jax, jaxlib and libtpu (pip install -r validation/xla/requirements.txt)"
    exit 77
fi
MAXTEXT=""
if [ -n "$REMAT_MAXTEXT_SRC" ] && [ -d "$REMAT_MAXTEXT_SRC/src/maxtext" ]; then
    MAXTEXT="--maxtext $REMAT_MAXTEXT_SRC"
elif ! "$PY" -c "import maxtext" >/dev/null 2>&1; then
    echo "skipped: no MaxText (set REMAT_MAXTEXT_SRC to a checkout, or install the maxtext package)"
    exit 77
fi
set -e
mkdir -p "$OUT"
SETTINGS="model_name=gpt3-52k topology=v5e-8 per_device_batch_size=1"
# shellcheck disable=SC2086
"$PY" "$SRC/validation/xla/oracle.py" $MAXTEXT $SETTINGS >"$OUT/oracle.json"
# shellcheck disable=SC2086
"$REMAT" analyze --format json $SETTINGS >"$OUT/remat.json"
"$PY" - "$OUT/oracle.json" "$OUT/remat.json" <<'PYEOF'
import json, sys
rec = json.load(open(sys.argv[1]))
remat = json.load(open(sys.argv[2]))
assert rec["status"] == "fits", f"status {rec['status']}: {rec.get('error')}"
ma = rec["memory_analysis"]
for key in ("peak_memory_in_bytes", "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
            "temp_size_in_bytes", "generated_code_size_in_bytes", "host_temp_size_in_bytes"):
    assert isinstance(ma.get(key), int), f"memory_analysis lacks {key}"
assert rec["xla_peak_bytes"] == ma["peak_memory_in_bytes"] > 0
assert rec["hardware"] == remat["hardware"] == "tpu-v5e" and rec["devices"] == remat["num_devices"] == 8
for key in ("jax", "jaxlib", "libtpu", "maxtext"):
    assert rec["versions"].get(key), f"no {key} version recorded"
assert rec["command"].startswith("python3 validation/xla/oracle.py")
print(f"XLA {rec['xla_peak_bytes']} bytes in {rec['compile_seconds']} s; remat {remat['peak_hbm_bytes']} "
      f"({remat['peak_hbm_bytes'] / rec['xla_peak_bytes']:.3f} of XLA's)")
PYEOF
