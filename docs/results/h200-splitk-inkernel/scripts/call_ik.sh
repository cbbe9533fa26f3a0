#!/bin/bash
# session 41: sm90_splitk's reduce inkernel on the H200. Its gpu tests, then one bench of ../kernels (each shape's
# in-kernel genomes, their reduction-launch twins, the record's best) at twelve split-K shapes, interleaved with
# the six vendor baselines. Kernels built on the CPU machine and carried: carry .kc/whl and .kc/s41 (cache.txz
# unpacking to cache/; ikk/ = make_kernels.py's folder). Usage: call_ik.sh [KERNEL_FOLDER (default .kc/s41/ikk)] [TAG]
set -u
K=${1:-.kc/s41/ikk}; TAG=${2:-ik}
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
tar xJf .kc/s41/cache.txz -C .kc/s41 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s41/cache
R=/tmp/res-$TAG; mkdir -p $R; trap "tar czf $OUT/res-$TAG.tgz -C /tmp res-$TAG" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 200 python -m pytest -q -m gpu -s tests/test_gpu_splitk_inkernel.py > $R/pytest-gpu-inkernel.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu-inkernel.log
S=$(ls $K/hall_of_fame | sed 's/\.json$//' | tr '\n' ' ')
timeout 330 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache $EVOGEMM_CACHE --per-shape \
  --shapes $S --kernels $K --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -iE "gate|wrong|fail|hang|error" $R/bench.log | head -8; tail -n 4 $R/bench.log
