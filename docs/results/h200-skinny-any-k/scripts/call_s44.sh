#!/bin/bash
# session 44, device call 1 (ran on an H200, 175 s): (a) one bench of the skinny_mma and sm90_padded seeds and eight
# M = 64 skinny candidates at suite-s44.yaml with the any-K loads change, (b) the same with session 43's template,
# (c) the any-K gate tests at all eight shapes and the batched rotation-set test (session 43's 256-byte slots).
# Carry .kc/whl and .kc/s44: cache.txz (every kernel prebuilt on the CPU machine, both templates), kernel_old.cu.j2
# (templates/skinny_mma/kernel.cu.j2 at f77e567), suite.yaml (= suite-s44.yaml), m64/ (= h200-s44/m64/).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/s44/cache ] || tar xJf .kc/s44/cache.txz -C .kc/s44 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s44/cache
R=$OUT/res1; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
echo "setup at $(( $(date +%s) - T0 )) s"; cat $R/gpu.txt
B="python -m experiments.cli bench --modes device --cache $EVOGEMM_CACHE --timing {\"repeats\":5} --per-shape --suite .kc/s44/suite.yaml --kernels templates/skinny_mma/seeds templates/sm90_padded/seeds .kc/s44/m64"
timeout 150 $B --out $R/bench-new > $R/bench-new.log 2>&1
echo "bench new rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[" $R/bench-new.log | cut -c1-120
cp templates/skinny_mma/kernel.cu.j2 /tmp/kernel_new.cu.j2; cp .kc/s44/kernel_old.cu.j2 templates/skinny_mma/kernel.cu.j2
timeout 150 $B --out $R/bench-old > $R/bench-old.log 2>&1
echo "bench old rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[" $R/bench-old.log | cut -c1-120
cp /tmp/kernel_new.cu.j2 templates/skinny_mma/kernel.cu.j2
timeout $(( 550 - ($(date +%s) - T0) )) python -m pytest -v -s -m gpu -rs --durations=0 tests/test_gpu_families.py tests/test_gpu.py -k "any_k or rotation_sets" > $R/pytest-anyk.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/pytest-anyk.log
