#!/bin/bash
# device call 1 (nvidia-h200), session 32: screen wg_split n kernels (sm90_cutlass, sm90_swapab) against the
# record's best kernel of each shape and the six vendor baselines; then the same bench's A/A.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s32/cache
R=$OUT/res; mkdir -p $R
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s32/HEAD
timeout 480 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
  --shapes 128x28672x4096 256x12288x4096 2048x2048x2048 4096x1024x1024 512x8192x28672 1024x4096x12288 8192x8192x1024 \
           1024x6144x4096 3072x3072x3072 10240x2560x2560 640x14336x2048 1536x1536x6144 \
  --kernels docs/results/h200-wg-split/kernels --out $R/screen > $R/screen.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; tail -5 $R/screen.log
cd $OUT && tar czf res.tgz res && rm -rf res
