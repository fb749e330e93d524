#!/bin/sh
# The SVG charts are well-formed XML (xmllint --noout, Debian's libxml2-utils):
# the memory timeline (one device, and a pipeline's second stage), the layers
# and the policies; and the timeline carries its peak label. Exit 77 (ctest:
# skipped) when xmllint is absent; CI installs it.
# usage: check_svg.sh REMAT OUTDIR
REMAT=$1
OUT=$2
if ! command -v xmllint >/dev/null 2>&1; then
    echo "xmllint not found (Debian: libxml2-utils): skipped"
    exit 77
fi
set -e
mkdir -p "$OUT"
"$REMAT" chart -o "$OUT/timeline.svg" model_name=llama3-8b topology=tpu7x-8 per_device_batch_size=2 \
    remat_policy=minimal_offloaded
"$REMAT" chart --stage 1 -o "$OUT/timeline_stage1.svg" model_name=llama3-8b num_devices=8 \
    ici_pipeline_parallelism=2 per_device_batch_size=2
"$REMAT" chart --kind layers -o "$OUT/layers.svg" model_name=llama3-70b topology=tpu7x-64 \
    remat_policy=save_qkv_proj
"$REMAT" chart --kind policies -o "$OUT/policies.svg" model_name=llama3-8b topology=tpu7x-8 \
    per_device_batch_size=2
# the default run at batch 6: policies off the scale, the solver's placement marked
"$REMAT" chart --kind policies -o "$OUT/policies_zoom.svg" per_device_batch_size=6
n=0
for f in "$OUT"/*.svg; do
    xmllint --noout "$f"
    n=$((n + 1))
done
grep -q 'id="remat-peak-label"' "$OUT/timeline.svg"
grep -q 'stage 1 of 2' "$OUT/timeline_stage1.svg"
echo "$n SVG charts are well-formed XML"
