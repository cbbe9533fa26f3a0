#!/bin/bash
# session 48. On an H200 first the public re-bench of session 47's plan (call_s47.sh with LIMIT=0: the baseline gpu
# test, then the selection and extra-s47 kernels at the public suite). On any Hopper GPU then: (1) the stream_wgmma
# family's seeds, now with small-side tiles (a small side above tile_s is a grid of tiles), against the six vendor
# baselines at suite-s46's twelve shapes; (2) the family's gpu gate test; (3) the vendor probe
# (../../h100-vendor-algos/scripts/vendor_algos.py: which cuBLASLt algorithms win at 37 shapes).
# Carry .kc/whl, .kc/s48/swcache.txz, and for an H200 .kc/s45/cache.txz .kc/s46/cache.txz .kc/s47/cache.txz.
set -u
T0=$(date +%s)
S=docs/results/h200-stream-wgmma
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  PUB_S=${PUB_S:-300} LIMIT=0 bash docs/results/h200-public-10/scripts/call_s47.sh
  echo "s47 public part done at $(( $(date +%s) - T0 )) s"
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
tar xJf .kc/s48/swcache.txz -C .kc/s48
mkdir -p $OUT/sw48 $OUT/vendor
timeout 200 python -m experiments.cli bench --modes device --cache $PWD/.kc/s48/swcache --timing '{"repeats":5}' \
  --per-shape --suite $S/suite-s46.yaml --kernels templates/stream_wgmma/seeds --out $OUT/sw48 > $OUT/sw48/bench.log 2>&1
echo "stream_wgmma bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/sw48/bench.log | cut -c1-160
EVOGEMM_CACHE=$PWD/.kc/s48/swcache timeout 120 python -m pytest -q -m gpu -rs tests/test_gpu_families.py -k stream_wgmma \
  > $OUT/pytest-gpu-stream-wgmma.log 2>&1
echo "pytest stream_wgmma rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $OUT/pytest-gpu-stream-wgmma.log
timeout 150 python docs/results/h100-vendor-algos/scripts/vendor_algos.py $OUT/vendor/vendor_algos.json > $OUT/vendor/vendor_algos.log 2>&1
echo "vendor probe rc=$? at $(( $(date +%s) - T0 )) s"; cut -c1-170 $OUT/vendor/vendor_algos.log | head -80
echo "done at $(( $(date +%s) - T0 )) s"
