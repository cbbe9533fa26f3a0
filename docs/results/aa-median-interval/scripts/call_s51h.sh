#!/bin/bash
# Session 51, on any GPU (no H200 came): the A/A check of call_s51.sh (three benches of the four public shapes over
# 1 ms, each shape's recorded best against the six vendor baselines, the new pairing and 21 focused rounds), then the
# GPU tests that time through the worker's rounds (tests/test_gpu.py: the gate, the short campaign's paired search and
# re-verification; tests/test_gpu_dependent_launch.py: the timing graphs' edges), with the kernels prebuilt on the
# CPU machine (.kc/s49/gtest.txz). Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/gtest.txz. One archive comes back.
set -u
T0=$(date +%s)
OUT0=$OUT; mkdir -p $OUT0/r
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT0/r/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/pcache; [ -d $C ] || tar xJf .kc/s48/pcache.txz -C /tmp || exit 8
S=docs/results/aa-median-interval
for name in $(seq -f aa%g 1 ${AA_RUNS:-3}); do
  mkdir -p $OUT0/r/$name
  timeout 100 python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
    --per-shape --suite $S/suite.yaml --kernels docs/results/h200-public-10/selection --out $OUT0/r/$name \
    > $OUT0/r/$name/bench.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "A/A" $OUT0/r/$name/bench.log | cut -c1-220
done
mkdir -p .kc/s49/gcache && tar xJf .kc/s49/gtest.txz -C .kc/s49/gcache || exit 7
EVOGEMM_CACHE=$PWD/.kc/s49/gcache timeout 200 python -m pytest -q -m gpu -rs -p no:cacheprovider tests/test_gpu.py \
  tests/test_gpu_dependent_launch.py > $OUT0/r/pytest-gpu.log 2>&1
echo "pytest -m gpu rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 6 $OUT0/r/pytest-gpu.log | cut -c1-240
cd $OUT0 && tar czf results.tgz --exclude=gpu0-worker.log r && rm -rf r && ls -la
