#!/bin/bash
# Session 50: does a longer graph replay narrow the A/A range at the shapes over 1 ms? On any GPU. `evogemm bench` of
# each shape's recorded best (../h200-public-10/selection) at the four shapes of suite.yaml, four times in a row,
# alternating the default timing (target_replay_ms 2: one or two launches a replay there) with target_replay_ms 20
# (4 to 12 launches). Carry .kc/whl and .kc/s48/pcache.txz (built on the CPU machine).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/pcache; [ -d $C ] || tar xJf .kc/s48/pcache.txz -C /tmp || exit 8
S=docs/results/aa-replay-length
for run in a1:2 b1:20 a2:2 b2:20; do
  name=${run%%:*}; ms=${run##*:}; mkdir -p $OUT/$name
  timeout ${RUN_S:-150} python -m experiments.cli bench --modes device --cache $C \
    --timing "{\"repeats\":5,\"target_replay_ms\":$ms}" --per-shape --suite $S/suite.yaml \
    --kernels docs/results/h200-public-10/selection --out $OUT/$name > $OUT/$name/bench.log 2>&1
  echo "$name (target_replay_ms $ms) rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|A/A" $OUT/$name/bench.log | cut -c1-170
done
