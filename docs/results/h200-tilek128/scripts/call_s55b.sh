#!/bin/bash
# Session 55, second device call: sm90_swapab_splitk variants of eb37e6ad at 512x512x16384 (../splitk512/: larger
# tiles with K split 8 ways, tile_k 128, clusters), beside eb37e6ad and the shape's recorded best
# (../../h200-public-10/selection), `bench --per-shape` twice. Any GPU (the device is in gpu.txt and bench.json).
# Carry .kc/whl, .kc/s55/cache.txz and .kc/s55/b.txz.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s55/cache.txz -C $C && tar xJf .kc/s55/b.txz -C $C || exit 8
for run in 1 2; do
  mkdir -p $OUT/r/s512-$run
  timeout 100 python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' --per-shape \
    --shapes 512x512x16384 --kernels docs/results/h200-public-10/selection \
    docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json \
    docs/results/h200-tilek128/splitk512/swapab-splitk-variants.json --out $OUT/r/s512-$run > $OUT/r/s512-$run/bench.log 2>&1
  echo "run $run rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/r/s512-$run/bench.log | cut -c1-160
done
cd $OUT && tar czf results.tgz --exclude=gpu0-worker.log r && rm -rf r
