#!/bin/bash
# Session 61, one device call: stream_wgmma's cluster along K. On any GPU: stream_wgmma's gpu tests (its seeds in its
# domain and test_stream_wgmma_cluster_along_k_passes_the_gate). On an H200: then the public bench with the record's
# command (../../skinny-y-resident/scripts/call_s57.sh) and ../kernels/screen added (each public shape also times its
# screen kernels). On any other GPU: then one bench of ../kernels/screen at its eight shapes, with the record's
# halls of fame (h200-public-10/selection) and all six vendor baselines. Carry .kc/whl and .kc/s61c.txz (the
# record's kernels, the gpu tests' and the screen's, built on the CPU machine). LIMIT_S (default 480): the call's limit;
# SKIP_TESTS=1 skips the gpu tests; CACHE: another kernel cache to carry and use instead (call_s62.sh); EXTRA_KERNELS:
# more kernel folders for the H200 bench (../../h200-public-13/scripts/call_s62c.sh).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf ${CACHE:-.kc/s61c.txz} -C $C || exit 8
if [ -z "${SKIP_TESTS:-}" ]; then
EVOGEMM_CACHE=$C timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/test_gpu_families.py \
  -k "stream_wgmma" > $OUT/pytest-gpu-stream.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu-stream.log)"
fi
P=docs/results/h200-public-10 Y=docs/results/skinny-y-resident SC=docs/results/stream-cluster-k/kernels/screen
LEFT=$(( ${LIMIT_S:-480} - ($(date +%s) - T0) - 15 ))
mkdir -p $OUT/b
if grep -q H200 $OUT/gpu.txt; then
  timeout $LEFT python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
    --per-shape --suite public --kernels $P/selection docs/results/h200-tilek128/probe $Y/kernels $P/public-mirrors \
    $P/public-mirrors-v2-new docs/results/h200-mirrors-rev2/mirrors-new \
    docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json $SC ${EXTRA_KERNELS:-} --out $OUT/b \
    > $OUT/b/bench.log 2>&1
else
  timeout $LEFT python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' --per-shape \
    --shapes 16x6144x4096 16x4096x14336 1x8192x8192 16x4096x4096 8192x64x8192 128x4096x4096 128x4096x14336 512x512x16384 \
    --kernels $P/selection $SC --out $OUT/b > $OUT/b/bench.log 2>&1
fi
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean|invalid|fail" $OUT/b/bench.log | cut -c1-200
rm -f $OUT/b/gpu0-worker.log $OUT/b/bench.csv
