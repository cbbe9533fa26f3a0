#!/bin/bash
# Session 53, on any GPU (LIMIT_S seconds in all, default 560; with ONLY_H200=1 it stops at once elsewhere). On an H200 with PUB=1 (the default) first the
# prepared public bench (../../h200-mirrors-rev2/scripts/call_s50b.sh, PUB_S seconds at most, default 240). Then,
# on any GPU:
#  1. pytest -m gpu tests/test_gpu_families.py -k swapab_splitk: every seed of the new family through the gate;
#  2. evogemm bench --per-shape of kernels/ (sm90_swapab_splitk, make_kernels.py), the sm90_swapab neighbourhood
#     of the vendor's 64x16 mirror (../skinny-swapab/kernels), the skinny_tma and skinny_mma seeds
#     (../skinny-swapab/refs) and each public shape's recorded best (../h200-public-10/selection), at suite.yaml,
#     interleaved with the six vendor baselines;
#  3. on an H200, in the time left, up to two A/A checks of ../aa-median-interval (its suite.yaml, the recorded best).
# Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/rev2.txz, .kc/s50/skinny.txz, .kc/s53/scache.txz (every kernel built
# on the CPU machine; a missing one builds on the device). One archive comes back.
set -u
T0=$(date +%s); LIMIT_S=${LIMIT_S:-560}
OUT0=$OUT; mkdir -p $OUT0/r
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT0/r/gpu.txt
left() { echo $(( LIMIT_S - ($(date +%s) - T0) - 20 )); }
if [ "${ONLY_H200:-0}" = 1 ] && ! grep -q H200 $OUT0/r/gpu.txt; then echo "not an H200: nothing (ONLY_H200=1)"; exit 0; fi
if grep -q H200 $OUT0/r/gpu.txt && [ "${PUB:-1}" = 1 ]; then
  mkdir -p $OUT0/r/rev2
  OUT=$OUT0/r/rev2 PUB_S=${PUB_S:-240} bash docs/results/h200-mirrors-rev2/scripts/call_s50b.sh
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc53; mkdir -p $C
tar xJf .kc/s53/scache.txz -C $C && tar xJf .kc/s50/skinny.txz -C $C || exit 8
[ -d /tmp/pcache ] || tar xJf .kc/s48/pcache.txz -C /tmp || exit 8
cp -rn /tmp/pcache/. $C/
EVOGEMM_CACHE=$C timeout 150 python -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_gpu_families.py \
  -k swapab_splitk > $OUT0/r/pytest-gpu-swapab-splitk.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $OUT0/r/pytest-gpu-swapab-splitk.log | cut -c1-200
S=docs/results/swapab-splitk; K=docs/results/skinny-swapab
L=$(left); mkdir -p $OUT0/r/bench
timeout $L python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' --per-shape \
  --suite $S/suite.yaml --kernels $S/kernels $K/kernels $K/refs docs/results/h200-public-10/selection \
  --out $OUT0/r/bench > $OUT0/r/bench/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\| [0-9]|geomean" $OUT0/r/bench/bench.md | cut -c1-80
# 3. on an H200, in what is left: the A/A check of ../aa-median-interval (each shape's recorded best at the four public
#    shapes over 1 ms: ../../aa-median-interval/scripts/aa_check.sh, which call_s51.sh runs too)
grep -q H200 $OUT0/r/gpu.txt && T0=$T0 MIN_S=60 bash docs/results/aa-median-interval/scripts/aa_check.sh \
  $(( T0 + LIMIT_S - 20 )) $C $OUT0/r aa1 aa2
cd $OUT0 && tar czf results.tgz --exclude=gpu0-worker.log r && rm -rf r && ls -la
