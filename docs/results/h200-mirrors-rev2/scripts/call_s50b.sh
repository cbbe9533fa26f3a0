#!/bin/bash
# Prepared in session 49; run in session 54 (../h200-public-12/call1, call2). On an H200 only (on any other GPU it stops at once): the public bench of
# ../h200-public-11 (the recorded best kernels of each shape and both H100-pick mirror sets) with mirrors-new/ (the
# 14 mirrors a new campaign, revision 2 of evolution/vendor_seeds.py, makes from the H200's own picks that no bench
# has timed: the swapped 320x128 and 192x192 tiles, the twins without the cluster), interleaved with the six vendor
# baselines. Carry .kc/whl, .kc/s48/pcache.txz and .kc/s49/rev2.txz (all built on the CPU machine).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if ! grep -q H200 $OUT/gpu.txt; then echo "not an H200: nothing"; exit 0; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=.kc/s49/rev2cache; mkdir -p $C && tar xJf .kc/s48/pcache.txz -C /tmp && cp -rn /tmp/pcache/. $C/ && tar xJf .kc/s49/rev2.txz -C $C || exit 8
P=docs/results/h200-public-10
mkdir -p $OUT/pub
timeout ${PUB_S:-400} python -m experiments.cli bench --modes device --cache $PWD/$C --timing '{"repeats":5}' \
  --per-shape --suite public --kernels $P/selection $P/public-mirrors $P/public-mirrors-v2-new \
  docs/results/h200-mirrors-rev2/mirrors-new --out $OUT/pub > $OUT/pub/bench.log 2>&1
echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/pub/bench.log | cut -c1-160
