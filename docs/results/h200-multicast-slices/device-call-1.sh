#!/bin/bash
# session 36, device call 1: screen (a) sm90_lean tiles with 4-CTA clusters whose B multicast slice is not a multiple of
# 8 rows (64x144, 64x176, 64x240, 128x80), at 1000^3 and nine shapes near it; (b) sm90_splitk with the vendor's
# tile at 512x512x16384 (cooperative 128x64, clusters 1x2 / 2x1 / 1x1, 4 and 8 splits) and six small-MN long-K shapes.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
R=$OUT/res; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt
timeout 280 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s36/cache \
  --shapes 1000x1000x1000 1024x1024x1024 768x768x768 1280x1280x1280 1000x1000x2000 2000x1000x1000 1008x1008x1008 \
           896x896x896 1100x1100x1100 1152x1152x1152 \
  --kernels .kc/s36/tiny --out $R/tiny > $R/tiny.log 2>&1
echo "tiny rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/tiny.log
timeout 240 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s36/cache \
  --shapes 512x512x16384 256x256x65536 640x640x12288 384x512x16384 512x1024x8192 512x512x8192 256x512x16384 \
  --kernels .kc/s36/sk --out $R/sk > $R/sk.log 2>&1
echo "sk rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/sk.log
