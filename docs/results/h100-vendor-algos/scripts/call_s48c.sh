#!/bin/bash
# session 48. On an H200 first the public re-bench of session 47's plan (call_s47.sh with LIMIT=0). On any Hopper
# GPU then: (1) the vendor-mirror seeds (../mirrors, made by make_mirrors.py from the H100 probe) against the six
# vendor baselines at ../suite-mirrors.yaml's ten shapes; (2) the gpu tests of this session's code: the mirrors of
# this GPU's own baselines at 1000^3 and 1280^3 (built here), the stream_wgmma family, the baselines' algorithms.
# Carry .kc/whl, .kc/s48/mcache.txz, and for an H200 .kc/s45/cache.txz .kc/s46/cache.txz .kc/s47/cache.txz.
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
tar xJf .kc/s48/mcache.txz -C .kc/s48
mkdir -p $OUT/mirrors
timeout 240 python -m experiments.cli bench --modes device --cache $PWD/.kc/s48/mcache --timing '{"repeats":5}' \
  --per-shape --suite $V/suite-mirrors.yaml --kernels $V/mirrors --out $OUT/mirrors > $OUT/mirrors/bench.log 2>&1
echo "mirror bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/mirrors/bench.log | cut -c1-160
EVOGEMM_CACHE=$PWD/.kc/s48/mcache timeout 200 python -m pytest -q -s -m gpu -rs tests/test_gpu_families.py \
  -k "vendor or stream_wgmma" > $OUT/pytest-gpu-s48.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "vendor|passed|failed|error" $OUT/pytest-gpu-s48.log | cut -c1-220 | tail -n 12
echo "done at $(( $(date +%s) - T0 )) s"
