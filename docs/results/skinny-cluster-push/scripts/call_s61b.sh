#!/bin/bash
# Session 61, one device call, two branches, after the commit that gives skinny_mma the shared mbarrier helpers
# (templates/evogemm_mbarrier_device.j2) and each kernel instance its own shared-memory attribute. On an H200:
# call_s61.sh's H200 branch (the public bench with the record's command, then the decode probe) with this commit's
# kernel cache. On any other GPU: skinny_mma's gpu tests and test_gpu.py's planted and step-count tests, then
# session 60's bench of the record's 146 kernels at six small public shapes (../tiny-after) on this commit.
# Carry .kc/whl and .kc/s61cache.txz (.kc/s60cache.txz with skinny_mma rebuilt); LIMIT_S (default 480): the call's limit.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then CACHE=.kc/s61cache.txz exec bash docs/results/skinny-y-resident/scripts/call_s58.sh; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s61cache.txz -C $C || exit 8
EVOGEMM_CACHE=$C timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/ \
  -k "(skinny and not skinny_tma) or interleav or planted or steps_off" > $OUT/pytest-gpu-skinny.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu-skinny.log)"
P=docs/results/h200-public-10
LEFT=$(( ${LIMIT_S:-480} - ($(date +%s) - T0) - 15 ))
if [ $LEFT -gt 60 ]; then mkdir -p $OUT/tiny; timeout $LEFT python -m experiments.cli bench --modes device --cache $C \
  --timing '{"repeats":5}' --per-shape --shapes 128x128x128 64x64x4096 96x3072x768 256x4096x256 1000x1000x1000 1024x1024x1024 \
  --kernels $P/selection docs/results/h200-tilek128/probe $P/public-mirrors $P/public-mirrors-v2-new \
  docs/results/h200-mirrors-rev2/mirrors-new docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json \
  --out $OUT/tiny > $OUT/tiny/bench.log 2>&1
echo "tiny bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean" $OUT/tiny/bench.log | cut -c1-160
rm -f $OUT/tiny/gpu0-worker.log $OUT/tiny/bench.csv; fi
