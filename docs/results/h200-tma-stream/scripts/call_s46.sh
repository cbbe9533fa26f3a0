#!/bin/bash
# session 46: the H200 answer for skinny_tma. On an H200: (a) the TMA streaming probe (section 1's, now on the
# H200's read ceiling), (b) evogemm bench of the skinny_tma and skinny_mma seeds at suite-s45.yaml, interleaved with
# the six vendor baselines, (c) the skinny_tma edge-configuration gpu test. On any other GPU only (c) runs: (a) and
# (b) were timed on an H100 in session 45. Carry .kc/whl and .kc/s45/cache.txz (every kernel prebuilt).
set -u
T0=$(date +%s)
S=docs/results/h200-tma-stream/scripts
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1; cat $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/s45/cache ] || tar xJf .kc/s45/cache.txz -C .kc/s45 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s45/cache
echo "setup at $(( $(date +%s) - T0 )) s"
if grep -q "H200" $OUT/gpu.txt; then
  nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xcompiler=-fPIC -shared -o /tmp/tma_stream.so $S/tma_stream.cu \
    && timeout 120 python3 $S/tma_stream.py /tmp/tma_stream.so $OUT/tma_stream.json > $OUT/tma_stream.log 2>&1
  echo "probe rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 12 $OUT/tma_stream.log
  timeout 240 python -m experiments.cli bench --modes device --cache $EVOGEMM_CACHE --timing '{"repeats":5}' --per-shape \
    --suite docs/results/h200-tma-stream/suite-s45.yaml --kernels templates/skinny_tma/seeds templates/skinny_mma/seeds \
    --out /tmp/bench > $OUT/bench.log 2>&1
  echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/bench.log | cut -c1-150
  cp /tmp/bench/bench.json /tmp/bench/bench.md $OUT/ 2>/dev/null
fi
timeout 150 python -m pytest -q -m gpu -rs tests/test_gpu_families.py -k "skinny_tma_edge" > $OUT/pytest-gpu-edge.log 2>&1
echo "pytest edge rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $OUT/pytest-gpu-edge.log
