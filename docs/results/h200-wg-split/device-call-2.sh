#!/bin/bash
# device call 2 (nvidia-h200), session 32: the wg_split n screen again without the two kernels whose 320- and
# 448-row TMA boxes hung (now refused by the rule tma-box), nine shapes, outputs written after each shape; then
# the gpu test of the split kernels.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s32/cache
R=$OUT/res; mkdir -p $R
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s32/HEAD
timeout 150 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
  --shapes 128x28672x4096 256x12288x4096 2048x2048x2048 4096x1024x1024 512x8192x28672 1024x4096x12288 \
           8192x8192x1024 3072x3072x3072 640x14336x2048 \
  --kernels docs/results/h200-wg-split/kernels --out $R/screen > $R/screen.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep "^\[" $R/screen.log
timeout 50 python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_families.py -k warpgroups > $R/pytest-wg.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-wg.log
cd $OUT && tar czf res.tgz res && rm -rf res
