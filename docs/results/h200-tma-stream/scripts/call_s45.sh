#!/bin/bash
# session 45, the family call: (a) evogemm bench of the skinny_tma seeds and the skinny_mma seeds at suite-s45.yaml,
# interleaved with the six vendor baselines (the gate on every run); (b) the skinny_tma gpu tests; (c) the rest of
# `pytest -m gpu` in what is left of LIMIT (default 420) seconds: the device budget was short. Carry .kc/whl and
# .kc/s45/cache.txz (every kernel prebuilt on the CPU machine).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/s45/cache ] || tar xJf .kc/s45/cache.txz -C .kc/s45 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s45/cache
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
echo "setup at $(( $(date +%s) - T0 )) s"; cat $OUT/gpu.txt
timeout 150 python -m experiments.cli bench --modes device --cache $EVOGEMM_CACHE --timing '{"repeats":5}' --per-shape \
  --suite docs/results/h200-tma-stream/suite-s45.yaml --kernels templates/skinny_tma/seeds templates/skinny_mma/seeds \
  --out /tmp/bench > $OUT/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/bench.log | cut -c1-150
cp /tmp/bench/bench.json /tmp/bench/bench.md $OUT/ 2>/dev/null
timeout 120 python -m pytest -q -m gpu -rs tests/test_gpu_families.py tests/test_gpu_abi_host_path.py -k skinny_tma \
  > $OUT/pytest-gpu-skinny-tma.log 2>&1
echo "pytest skinny_tma rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $OUT/pytest-gpu-skinny-tma.log
LEFT=$(( ${LIMIT:-420} - ($(date +%s) - T0) ))
[ $LEFT -gt 60 ] && timeout $LEFT python -m pytest -q -m gpu -rs --durations=15 tests/test_gpu_families.py tests/test_gpu.py \
  tests/test_gpu_abi_host_path.py tests/test_gpu_dependent_launch.py tests/test_gpu_splitk_inkernel.py tests/test_gpu_export.py \
  -k "not skinny_tma" > $OUT/pytest-gpu.log 2>&1
echo "pytest rest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 25 $OUT/pytest-gpu.log
