#!/bin/bash
# session 40 (to run): cluster_grid occupancy against CUTLASS's cluster estimate. The gpu tests of the new
# kernels (the gate at three shapes, the count each is told, the ABI host path of a stream-K one), then one bench
# of the pairs of ../kernels (occupancy, cutlass) and the records' best kernels (refs) at six shapes, interleaved
# with the six vendor baselines. Kernels built on the CPU machine and
# carried: carry .kc/whl and .kc/s40 (cache_grid.txz; kernels/ copied from docs/results/h200-cluster-grid/kernels).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
tar xJf .kc/s40/cache_grid.txz -C .kc/s40 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s40/cache_grid
# its own results folder and archive, so that another experiment's script can run after it in the same call
R=/tmp/res-grid; mkdir -p $R; trap "tar czf $OUT/res-grid.tgz -C /tmp res-grid" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
# the ABI host-path test builds its ten kernels itself (about a minute on 16 cores); -k keeps its occupancy case
timeout 240 python -m pytest -q -m gpu -s tests/test_gpu_families.py tests/test_gpu_abi_host_path.py \
  -k "cluster_grid or occupancy" > $R/pytest-gpu-cluster-grid.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu-cluster-grid.log
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache $EVOGEMM_CACHE --per-shape \
  --shapes 1280x1280x1280 5000x1000x3000 3072x1280x1024 640x3584x2048 2048x8192x1000 4096x4096x4096 \
  --kernels .kc/s40/kernels/occupancy .kc/s40/kernels/cutlass .kc/s40/kernels/refs --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -iE "gate|wrong|fail|hang" $R/bench.log | head -5; tail -n 4 $R/bench.log
