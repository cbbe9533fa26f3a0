#!/bin/bash
# Session 55, one device call. On an H200: the public bench of ../../h200-public-12/scripts/call_s55.sh (each shape's
# recorded best, the mirror sets, sm90_swapab_splitk eb37e6ad at every shape) plus this folder's probes
# (../probe/hall_of_fame: tile_k 128 twins of the best configurations at 128x28672x4096, 256x12288x4096 and
# 512x8192x28672, timed at their own shapes), the sm90_swapab_splitk gpu tests, then in what is left of LIMIT_S the A/A
# check (../../aa-median-interval/scripts/aa_check.sh). On any other GPU: the gpu tests and a bench of the three
# probed shapes only (not an H200 figure), or with H100_DONE=1 nothing. Carry .kc/whl and .kc/s55/cache.txz (every kernel built on the CPU machine).
set -u
T0=$(date +%s); LIMIT_S=${LIMIT_S:-560}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if ! grep -q H200 $OUT/gpu.txt && [ -n "${H100_DONE:-}" ]; then echo "not an H200 (H100_DONE): nothing"; exit 0; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s55/cache.txz -C $C || exit 8
P=docs/results/h200-public-10 Q=docs/results/h200-tilek128
mkdir -p $OUT/r/pub $OUT/r/probe
gputests() {
  EVOGEMM_CACHE=$C timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_families.py -k swapab_splitk \
    > $OUT/r/pytest-swapab-splitk.log 2>&1
  echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/r/pytest-swapab-splitk.log)"
}
if grep -q H200 $OUT/gpu.txt; then
  timeout ${PUB_S:-300} python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
    --per-shape --suite public --kernels $P/selection $Q/probe $P/public-mirrors $P/public-mirrors-v2-new \
    docs/results/h200-mirrors-rev2/mirrors-new docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json \
    --out $OUT/r/pub > $OUT/r/pub/bench.log 2>&1
  echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/r/pub/bench.log | cut -c1-160
  gputests
  T0=$T0 MIN_S=60 bash docs/results/aa-median-interval/scripts/aa_check.sh $(( T0 + LIMIT_S - 20 )) $C $OUT/r aa1 aa2
else
  gputests
  timeout 150 python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' --per-shape \
    --shapes 128x28672x4096 256x12288x4096 512x8192x28672 --kernels $P/selection $Q/probe --out $OUT/r/probe \
    > $OUT/r/probe/bench.log 2>&1
  echo "probe bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/r/probe/bench.log | cut -c1-160
fi
cd $OUT && tar czf results.tgz --exclude=gpu0-worker.log r && rm -rf r
