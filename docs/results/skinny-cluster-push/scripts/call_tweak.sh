#!/bin/bash
# session 60, third: the committed cluster reduction (base) against cluster_reduce through ld.shared (tweak) and
# that inlined (inl), 8 cluster kernels, one bench at 5 small-M*N shapes.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s60/twc.txz -C $C || exit 8
mkdir -p $OUT/tw
timeout ${LIMIT_S:-200} python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":7}' \
  --shapes 64x64x4096 128x128x128 32x64x8192 64x64x1024 256x64x2048 \
  --kernels .kc/s60/tw/base .kc/s60/tw/tweak .kc/s60/tw/inl --out $OUT/tw > $OUT/tw/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean|invalid" $OUT/tw/bench.log | cut -c1-160
rm -f $OUT/tw/gpu0-worker.log $OUT/tw/bench.csv
