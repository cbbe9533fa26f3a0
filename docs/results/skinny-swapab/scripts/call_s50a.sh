#!/bin/bash
# Prepared in session 49, not yet run. On an H200 only (on any other GPU it stops at once): `evogemm bench` of
# kernels/ (the sm90_swapab neighbourhood, make_neighbours.py) and refs/ (every hand-picked skinny_tma and
# skinny_mma seed) at every shape of suite.yaml, with each public shape's recorded best (../h200-public-10/selection)
# there too, interleaved with the six vendor baselines. Carry .kc/whl and .kc/s50/skinny.txz (every kernel built
# on the CPU machine; a missing one builds on the device's 16 cores).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if ! grep -q H200 $OUT/gpu.txt; then echo "not an H200: nothing"; exit 0; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p .kc/s50/skinny && tar xJf .kc/s50/skinny.txz -C .kc/s50/skinny || exit 8
S=docs/results/skinny-swapab
mkdir -p $OUT/bench
timeout ${BENCH_S:-400} python -m experiments.cli bench --modes device --cache $PWD/.kc/s50/skinny \
  --timing '{"repeats":5}' --per-shape --suite $S/suite.yaml --kernels $S/kernels $S/refs \
  docs/results/h200-public-10/selection --out $OUT/bench > $OUT/bench/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/bench/bench.log | cut -c1-160
