#!/bin/bash
# Session 54, any GPU: evogemm bench --per-shape of ../kernels (make_kernels.py: sm90_swapab_splitk `ws` with a small
# stage count, two or three CTAs an SM, and the references) and the record's kernels at 512x512x16384
# (../../h200-public-10/selection), at ../suite.yaml, interleaved with the six vendor baselines. TESTS=1 first runs
# the gpu tests of sm90_swapab_splitk. Writes $OUT/two-ctas.tgz. LIMIT_S: seconds in all (default 300).
# Carry .kc/whl, .kc/s48/pcache.txz, .kc/s53/scache.txz, .kc/s54/tcache.txz.
set -u
T0=$(date +%s); LIMIT_S=${LIMIT_S:-300}
R=/tmp/two-ctas; mkdir -p $R/bench; trap "tar czf $OUT/two-ctas.tgz --exclude=gpu0-worker.log -C /tmp two-ctas" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc54; mkdir -p $C
tar xJf .kc/s54/tcache.txz -C $C && tar xJf .kc/s53/scache.txz -C $C || exit 8
[ -d /tmp/pcache ] || tar xJf .kc/s48/pcache.txz -C /tmp || exit 8
cp -rn /tmp/pcache/. $C/
if [ "${TESTS:-0}" = 1 ]; then
  EVOGEMM_CACHE=$C timeout 200 python3 -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_gpu_families.py \
    -k swapab_splitk > $R/pytest-gpu-swapab-splitk.log 2>&1
  echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $R/pytest-gpu-swapab-splitk.log | cut -c1-200
fi
S=docs/results/splitk-two-ctas
timeout $(( LIMIT_S - ($(date +%s) - T0) - 15 )) python -m experiments.cli bench --modes device --cache $C \
  --timing '{"repeats":5}' --per-shape --suite $S/suite.yaml --kernels $S/kernels docs/results/h200-public-10/selection \
  --out $R/bench > $R/bench/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\| [0-9]|geomean" $R/bench/bench.md | cut -c1-100
