#!/bin/bash
# Session 66, prepared for any GPU: sm90_swapab with CUTLASS's stream-K decomposition (../kernels, make_kernels.py)
# against bedab432 (the leader at both public decode shapes) and the six vendor baselines, at two public decode shapes
# and three others: one `evogemm bench`, gated, interleaved, 5 rounds. Carry .kc/whl and .kc/s66sk.txz (CACHE:
# another): the seven builds, made on the CPU machine (../../gpu-suite-time/scripts/build_carry.py's group `streamk`).
# About a minute of command (an estimate; not yet run).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf ${CACHE:-.kc/s66sk.txz} -C $C || exit 8
LEFT=$(( ${LIMIT_S:-240} - ($(date +%s) - T0) - 15 ))
mkdir -p $OUT/b
timeout $LEFT python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
  --shapes 16x6144x4096 16x4096x14336 16x4096x4096 1x8192x8192 8x14336x4096 \
  --kernels docs/results/swapab-streamk/kernels docs/results/skinny-swapab/kernels/sm90_swapab-bedab432.json \
  --out $OUT/b > $OUT/b/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean|invalid|fail" $OUT/b/bench.log | cut -c1-200
rm -f $OUT/b/gpu0-worker.log $OUT/b/bench.csv
