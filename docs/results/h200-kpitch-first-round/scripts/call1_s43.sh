#!/bin/bash
# session 43, device call 1: the whole `pytest -m gpu` on the current head with every kernel the tests use built on
# the CPU machine (tests/gpu_prebuild.py) and carried, then the K-pitch first-round bench of session 41
# (docs/results/h200-kpitch-first-round). Carry .kc/whl and .kc/c43 (cache.txz -> cache/, first/, vendor_kernels.py).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/c43/cache ] || tar xJf .kc/c43/cache.txz -C .kc/c43 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/c43/cache
R=/tmp/res1; mkdir -p $R; trap "tar czf $OUT/res1.tgz -C /tmp res1" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
git log -1 --format=%H > $R/head.txt 2>/dev/null
python tests/gpu_prebuild.py --jobs 16 > $R/prebuild.log 2>&1
echo "prebuild rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/prebuild.log
timeout $(( 430 - ($(date +%s) - T0) )) python -m pytest -q -m gpu -rs tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 5 $R/pytest-gpu.log
S=$(ls .kc/c43/first/hall_of_fame | sed 's/\.json$//' | tr '\n' ' ')
timeout $(( 560 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache $EVOGEMM_CACHE --per-shape \
  --shapes $S --kernels .kc/c43/first --out $R/bench-kp > $R/bench-kp.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -iE "gate|wrong|fail|hang|error" $R/bench-kp.log | head -5; tail -n 4 $R/bench-kp.log
timeout $(( 590 - ($(date +%s) - T0) )) python3 .kc/c43/vendor_kernels.py $R/vendor-kernels.json $S > $R/vendor-kernels.log 2>&1
echo "vendor kernels rc=$? at $(( $(date +%s) - T0 )) s"
