#!/bin/bash
# session 40 (prepared; carry .kc/s39 with fr9/ from make_first_rounds.py and cache.txz): the first rounds of h200-unseen-9-a (wave_cooperative false) and -b (true) at their eight unseen shapes,
# every first-round kernel of both arms timed at every shape, interleaved with the six vendor baselines; kernels
# built on the CPU machine (cache.txz). Then the analysis compares each arm's own first round per shape.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
tar xJf .kc/s39/cache.txz -C .kc/s39 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s39/cache
R=/tmp/res-fr9; mkdir -p $R; trap "tar czf $OUT/res-fr9.tgz -C /tmp res-fr9" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
S="1792x2304x4096 1536x2560x6144 2560x1536x1024 1920x1920x3072 2304x2048x8192 3072x1536x4096 1408x3328x2048 1664x2048x5120"
timeout 500 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache $EVOGEMM_CACHE --per-shape \
  --shapes $S --kernels .kc/s39/fr9/kernels --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -iE "gate|wrong|fail|hang" $R/bench.log | head -5; tail -n 4 $R/bench.log
