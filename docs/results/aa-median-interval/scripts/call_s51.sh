#!/bin/bash
# Session 51, on any GPU (LIMIT_S seconds in all, default 560). The worker now times each candidate between two
# replays of the reference (their geometric mean its pair) and the bench's focused run has 21 rounds, quoting the
# median's 95% interval beside the range. On an H200: the prepared public bench with the revision-2 mirrors
# (../../h200-mirrors-rev2/scripts/call_s50b.sh) and the skinny neighbourhood (../../skinny-swapab/scripts/
# call_s50a.sh; SKINNY=0 leaves it out), then the A/A check in what is left; on any other GPU the A/A check alone: `evogemm bench` of each
# shape's recorded best (../h200-public-10/selection) at the four public shapes over 1 ms (suite.yaml), three times.
# On any other GPU it runs call_s51h.sh instead (the A/A check and the GPU tests of the worker's timing), or stops at
# once with ONLY_H200=1. PUB_S caps the public bench (default 300 s).
# Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/rev2.txz, .kc/s50/skinny.txz, .kc/s49/gtest.txz. One archive comes back.
set -u
T0=$(date +%s); LIMIT_S=${LIMIT_S:-560}
OUT0=$OUT; mkdir -p $OUT0/r
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT0/r/gpu.txt
if ! grep -q H200 $OUT0/r/gpu.txt; then
  [ "${ONLY_H200:-0}" = 1 ] && { echo "not an H200: nothing (ONLY_H200=1)"; exit 0; }
  exec bash docs/results/aa-median-interval/scripts/call_s51h.sh
fi
left() { echo $(( LIMIT_S - ($(date +%s) - T0) - 20 )); }
if grep -q H200 $OUT0/r/gpu.txt; then
  mkdir -p $OUT0/r/rev2 $OUT0/r/skinny
  OUT=$OUT0/r/rev2 PUB_S=${PUB_S:-300} bash docs/results/h200-mirrors-rev2/scripts/call_s50b.sh
  L=$(left); [ ${SKINNY:-1} = 1 ] && [ $L -gt 60 ] && OUT=$OUT0/r/skinny BENCH_S=$(( L < 170 ? L : 170 )) bash docs/results/skinny-swapab/scripts/call_s50a.sh
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/pcache; [ -d $C ] || tar xJf .kc/s48/pcache.txz -C /tmp || exit 8
T0=$T0 bash docs/results/aa-median-interval/scripts/aa_check.sh $(( T0 + LIMIT_S - 20 )) $C $OUT0/r aa1 aa2 aa3
cd $OUT0 && tar czf results.tgz --exclude=gpu0-worker.log r && rm -rf r && ls -la
