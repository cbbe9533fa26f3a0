#!/bin/bash
# session 48, the A/B again after the mirrors took the rest of their parameters from the hand-picked base the model
# prices fastest: ../campaign-mirrors (the first version: nearest base in tile), ../campaign-mirrors-v2-new (the six
# of the new version's 18 that differ, ../campaign-mirrors-v2) and ../refs, at ../suite-mirrors.yaml's ten shapes,
# interleaved with the six vendor baselines. Any Hopper GPU. Carry .kc/whl, .kc/s48/rcache.txz.
set -u
T0=$(date +%s)
V=docs/results/h100-vendor-algos
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
tar xJf .kc/s48/rcache.txz -C .kc/s48
mkdir -p $OUT/ab2
timeout 300 python -m experiments.cli bench --modes device --cache $PWD/.kc/s48/rcache --timing '{"repeats":5}' \
  --per-shape --suite $V/suite-mirrors.yaml --kernels $V/campaign-mirrors $V/campaign-mirrors-v2-new $V/refs \
  --out $OUT/ab2 > $OUT/ab2/bench.log 2>&1
echo "A/B 2 bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/ab2/bench.log | cut -c1-160
