#!/bin/bash
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s60/cache.txz -C $C || exit 8
mkdir -p $OUT/lat
timeout ${LIMIT_S:-300} python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":7}' \
  --shapes 64x64x4096 128x128x128 32x64x8192 128x128x512 64x64x1024 256x64x2048 \
  --kernels .kc/s60/kernels/base .kc/s60/kernels/peer .kc/s60/kernels/nocl .kc/s60/kernels/both --out $OUT/lat > $OUT/lat/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean|invalid|fail" $OUT/lat/bench.log | cut -c1-160
rm -f $OUT/lat/gpu0-worker.log $OUT/lat/bench.csv
