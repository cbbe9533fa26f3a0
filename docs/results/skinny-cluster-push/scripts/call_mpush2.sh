#!/bin/bash
# session 60, second: skinny_mma with the templated cluster reduction (kCluster). gpu tests: skinny_mma's, the
# cluster reduction's, test_gpu.py's gate tests (planted fp16 kernel at the public shapes and three small outputs;
# fp16_steps_off against its numpy twin); then one bench of the record's 9 skinny_mma kernels as built now (new) and
# with the old reduction (patched: old) and the 72-configuration screen.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s58cache.txz -C $C && tar xJf .kc/s60/abc2.txz -C $C || exit 8
EVOGEMM_CACHE=$C timeout ${TEST_S:-300} python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs \
  -k "skinny_mma or interleaved_k_splits or skinny_any_k or cluster_reduction or planted_fp16 or steps_off" \
  tests/test_gpu_families.py tests/test_gpu_abi_host_path.py tests/test_gpu.py > $OUT/pytest-gpu.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu.log)"
mkdir -p $OUT/ab
LEFT=$(( ${LIMIT_S:-540} - ($(date +%s) - T0) - 15 ))
timeout $LEFT python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
  --shapes 64x64x4096 128x128x128 16x4096x14336 32x64x8192 64x64x1024 256x64x2048 \
  --kernels .kc/s60/ab/new .kc/s60/ab/old .kc/s60/ab/screen --out $OUT/ab > $OUT/ab/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean|invalid" $OUT/ab/bench.log | cut -c1-160
rm -f $OUT/ab/gpu0-worker.log $OUT/ab/bench.csv
