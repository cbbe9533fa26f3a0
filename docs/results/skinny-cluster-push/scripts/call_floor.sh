#!/bin/bash
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s58cache.txz -C $C || exit 8
timeout 120 python3 .kc/s60/floor.py $OUT/floor.json 2>&1 | tee $OUT/floor.log | tail -30
echo "floor rc=$? at $(( $(date +%s) - T0 )) s"
P=docs/results/h200-public-10
mkdir -p $OUT/tiny
LEFT=$(( ${LIMIT_S:-400} - ($(date +%s) - T0) - 20 ))
timeout $LEFT python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' --per-shape \
  --shapes 128x128x128 64x64x4096 96x3072x768 256x4096x256 1000x1000x1000 1024x1024x1024 \
  --kernels $P/selection docs/results/h200-tilek128/probe $P/public-mirrors $P/public-mirrors-v2-new \
  docs/results/h200-mirrors-rev2/mirrors-new docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json \
  --out $OUT/tiny > $OUT/tiny/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean" $OUT/tiny/bench.log | cut -c1-160
rm -f $OUT/tiny/gpu0-worker.log $OUT/tiny/bench.csv
ls $OUT $OUT/tiny
