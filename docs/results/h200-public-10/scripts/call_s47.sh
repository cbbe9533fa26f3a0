#!/bin/bash
# session 47. On an H200, in order of value: (1) the public re-bench over ../selection (top-3 recorded kernels per
# public shape, interleaved with the six vendor baselines), (2) the skinny_tma probe and bench
# (../../h200-tma-stream/scripts/call_s46.sh), (3) the stream_wgmma seeds' bench. On any other GPU: the stream_wgmma
# prototype's diagnostics, run twice on an H100 already: instead, the stream_wgmma seeds' bench again, whose
# bench.json now names the cuBLASLt algorithm each cuBLASLt baseline ran (BaselineSet.algorithms).
# Either GPU: the baseline gpu test (tests/test_gpu.py -k baselines), which checks those algorithm records.
# Carry .kc/whl, .kc/s45/cache.txz, .kc/s46/cache.txz, .kc/s46/swcache.txz.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
tar xJf .kc/s46/cache.txz -C .kc/s46; tar xJf .kc/s46/swcache.txz -C .kc/s46
mkdir -p $OUT/pub $OUT/swbench $OUT/tma
timeout 120 python -m pytest -q -m gpu -rs tests/test_gpu.py -k baselines > $OUT/pytest-gpu-baselines.log 2>&1
echo "pytest baselines rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $OUT/pytest-gpu-baselines.log
if ! grep -q H200 $OUT/gpu.txt; then
  timeout 120 python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/swcache --timing '{"repeats":5}' \
    --per-shape --suite docs/results/h200-stream-wgmma/suite-s46.yaml --kernels templates/stream_wgmma/seeds \
    --out $OUT/swbench > $OUT/swbench/bench.log 2>&1
  echo "stream_wgmma bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/swbench/bench.log | cut -c1-160
  exit 0
fi
timeout ${PUB_S:-300} python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/cache --timing '{"repeats":5}' \
  --per-shape --suite public --kernels docs/results/h200-public-10/selection --out $OUT/pub > $OUT/pub/bench.log 2>&1
echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/pub/bench.log | cut -c1-160
OUT=$OUT/tma bash docs/results/h200-tma-stream/scripts/call_s46.sh
timeout 60 python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/swcache --timing '{"repeats":5}' \
  --per-shape --suite docs/results/h200-stream-wgmma/suite-s46.yaml --kernels templates/stream_wgmma/seeds \
  --out $OUT/swbench > $OUT/swbench/bench.log 2>&1
echo "stream_wgmma bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/swbench/bench.log | cut -c1-160
echo "done at $(( $(date +%s) - T0 )) s"
