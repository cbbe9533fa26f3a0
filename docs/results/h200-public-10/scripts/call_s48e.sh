#!/bin/bash
# session 48. An H200 only (on any other GPU it stops at once): the gpu baseline test, then the public re-bench over
# ../selection (the three best recorded kernels of each public shape), ../public-mirrors (the vendor mirrors of
# the H100 probe's picks at 25 public shapes, two a shape: ../../h100-vendor-algos/scripts/make_mirrors.py ... 2)
# and ../public-mirrors-v2-new (the 8 of their model's-base version, public-mirrors-v2-notes.json, not in the first),
# interleaved with the six vendor baselines, partial results per shape; then the gpu tests of session 48's code.
# Carry .kc/whl, .kc/s48/pcache.txz.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if ! grep -q H200 $OUT/gpu.txt; then echo "not an H200: nothing"; exit 0; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
tar xJf .kc/s48/pcache.txz -C .kc/s48
P=docs/results/h200-public-10
mkdir -p $OUT/pub
timeout 90 python -m pytest -q -m gpu -rs tests/test_gpu.py -k baselines > $OUT/pytest-gpu-baselines.log 2>&1
echo "pytest baselines rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $OUT/pytest-gpu-baselines.log
timeout ${PUB_S:-360} python -m experiments.cli bench --modes device --cache $PWD/.kc/s48/pcache --timing '{"repeats":5}' \
  --per-shape --suite public --kernels $P/selection $P/public-mirrors $P/public-mirrors-v2-new --out $OUT/pub \
  > $OUT/pub/bench.log 2>&1
echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/pub/bench.log | cut -c1-160
EVOGEMM_CACHE=$PWD/.kc/s48/pcache timeout 120 python -m pytest -q -s -m gpu -rs tests/test_gpu_families.py \
  -k "vendor" > $OUT/pytest-gpu-vendor.log 2>&1
echo "pytest vendor rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "vendor|passed|failed|error" $OUT/pytest-gpu-vendor.log | cut -c1-220 | tail -n 8
echo "done at $(( $(date +%s) - T0 )) s"
