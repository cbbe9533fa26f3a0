#!/bin/bash
# session 48. On an H200 first the public re-bench of session 47's plan (call_s47.sh with LIMIT=0). On any Hopper
# GPU then the A/B of the vendor mirrors: the mirrors a campaign would time first at each of ../suite-mirrors.yaml's
# ten shapes (../campaign-mirrors: population.vendor_seeds 2, from the algorithms the h100-s48 bench's baselines
# recorded; make_campaign_mirrors.py) against the two best kernels any H200 bench recorded at each shape
# (../refs: best_refs.py), all interleaved with the six vendor baselines.
# Carry .kc/whl, .kc/s48/rcache.txz, and for an H200 .kc/s45/cache.txz .kc/s46/cache.txz .kc/s47/cache.txz.
set -u
T0=$(date +%s)
V=docs/results/h100-vendor-algos
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  PUB_S=${PUB_S:-300} LIMIT=0 bash docs/results/h200-public-10/scripts/call_s47.sh
  echo "s47 public part done at $(( $(date +%s) - T0 )) s"
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
tar xJf .kc/s48/rcache.txz -C .kc/s48
mkdir -p $OUT/ab
timeout 250 python -m experiments.cli bench --modes device --cache $PWD/.kc/s48/rcache --timing '{"repeats":5}' \
  --per-shape --suite $V/suite-mirrors.yaml --kernels $V/campaign-mirrors $V/refs --out $OUT/ab > $OUT/ab/bench.log 2>&1
echo "A/B bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/ab/bench.log | cut -c1-160
echo "done at $(( $(date +%s) - T0 )) s"
