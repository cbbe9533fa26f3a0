#!/bin/bash
# Session 68, one device call, two branches. On an H200: ../../h200-public-13/scripts/call_s63.sh (the record's public
# bench with its kernels/consistent and kernels/decode-neighbours added). On any other GPU: that same bench command,
# the same kernels and settings, on that GPU (a first public-suite figure of the record's kernel set on an H100; the
# issue's figure is the H200's). Carry .kc/whl and .kc/s65b.txz; LIMIT_S as call_s61c.sh (give it 360).
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 \
  && CACHE=${CACHE:-.kc/s65b.txz} exec bash docs/results/h200-public-13/scripts/call_s63.sh
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf ${CACHE:-.kc/s65b.txz} -C $C || exit 8
P=docs/results/h200-public-10 K=docs/results/h200-public-13/kernels
LEFT=$(( ${LIMIT_S:-360} - ($(date +%s) - T0) - 15 ))
mkdir -p $OUT/b
timeout $LEFT python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
  --per-shape --suite public --kernels $P/selection docs/results/h200-tilek128/probe docs/results/skinny-y-resident/kernels \
  $P/public-mirrors $P/public-mirrors-v2-new docs/results/h200-mirrors-rev2/mirrors-new \
  docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json docs/results/stream-cluster-k/kernels/screen \
  $K/decode-neighbours $K/consistent --out $OUT/b > $OUT/b/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean|invalid|fail" $OUT/b/bench.log | cut -c1-200
rm -f $OUT/b/gpu0-worker.log $OUT/b/bench.csv
