#!/bin/bash
# session 47. On an H200, in order of value: (1) the public re-bench over ../selection (top-3 recorded kernels per
# public shape, interleaved with the six vendor baselines; with ../extra-s47, the record kernels' 64x64 tile in a
# 2x1 cluster, the cuBLASLt pick an H100 bench named at these shapes), (2) the skinny_tma and skinny_mma
# seeds' bench (../../h200-tma-stream/suite-s45.yaml; its probe, run on an H100 in session 45, is left out here),
# (3) the stream_wgmma seeds' bench, (2) and (3) in what is left of LIMIT. On any other GPU: the selection's and
# extra-s47's kernels at ../extra-s47/suite.yaml's four shapes. On the H200 first the baseline gpu test
# (tests/test_gpu.py -k baselines), which checks that bench.json names each cuBLASLt baseline's algorithm.
# Carry .kc/whl, .kc/s45/cache.txz, .kc/s46/cache.txz, .kc/s46/swcache.txz, .kc/s47/cache.txz.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if ! grep -q H200 $OUT/gpu.txt && [ -n "${H100_SKIP:-}" ]; then echo "not an H200, H100_SKIP set: nothing"; exit 0; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
tar xJf .kc/s46/cache.txz -C .kc/s46; tar xJf .kc/s46/swcache.txz -C .kc/s46; tar xJf .kc/s45/cache.txz -C .kc/s45
tar xJf .kc/s47/cache.txz -C .kc/s46   # ../extra-s47's kernels into the selection's cache
mkdir -p $OUT/pub $OUT/swbench $OUT/tma
if ! grep -q H200 $OUT/gpu.txt; then
  timeout 150 python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/cache --timing '{"repeats":5}' \
    --per-shape --suite docs/results/h200-public-10/extra-s47/suite.yaml --kernels docs/results/h200-public-10/selection \
    docs/results/h200-public-10/extra-s47 --out $OUT/extra > $OUT/extra.log 2>&1
  echo "extra-s47 bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/extra.log | cut -c1-160
  exit 0
fi
timeout 120 python -m pytest -q -m gpu -rs tests/test_gpu.py -k baselines > $OUT/pytest-gpu-baselines.log 2>&1
echo "pytest baselines rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $OUT/pytest-gpu-baselines.log
timeout ${PUB_S:-300} python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/cache --timing '{"repeats":5}' \
  --per-shape --suite public --kernels docs/results/h200-public-10/selection docs/results/h200-public-10/extra-s47 --out $OUT/pub > $OUT/pub/bench.log 2>&1
echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/pub/bench.log | cut -c1-160
LEFT=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
[ $LEFT -gt 30 ] && timeout $LEFT python -m experiments.cli bench --modes device --cache $PWD/.kc/s45/cache --timing '{"repeats":5}' \
  --per-shape --suite docs/results/h200-tma-stream/suite-s45.yaml --kernels templates/skinny_tma/seeds templates/skinny_mma/seeds \
  --out $OUT/tma > $OUT/tma/bench.log 2>&1
echo "skinny bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/tma/bench.log | cut -c1-160
LEFT=$(( ${LIMIT:-560} - ($(date +%s) - T0) ))
[ $LEFT -gt 30 ] && timeout $LEFT python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/swcache --timing '{"repeats":5}' \
  --per-shape --suite docs/results/h200-stream-wgmma/suite-s46.yaml --kernels templates/stream_wgmma/seeds \
  --out $OUT/swbench > $OUT/swbench/bench.log 2>&1
echo "stream_wgmma bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/swbench/bench.log | cut -c1-160
echo "done at $(( $(date +%s) - T0 )) s"
