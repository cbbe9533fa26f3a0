#!/bin/bash
# device call 1 (nvidia-h200, one GPU), session 25: first-round seeds with and without their shape knobs fitted
# by the family models (population.fit_knobs), timed in one bench, interleaved with the six vendor baselines:
# at each of 22 shapes (the ten of h200-unseen-2, twelve public ones), every seed the campaign's first round
# takes fitted, and the same seed as it was taken before (.kc/s27/abdir/hall_of_fame/SHAPE.json). Builds carried.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s27/call.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
U="12x3584x3584 8x16384x5120 96x4096x14336 384x3072x8192 640x640x12288 1280x3584x18944 1792x7168x2048 2560x2560x10240 3000x2000x1504 4608x4608x1536"
P="64x64x4096 512x512x16384 1024x1024x1024 128x4096x4096 8192x64x8192 16x6144x4096 16x4096x14336 128x4096x14336 256x4096x256 96x3072x768 1000x1000x1000 1024x6144x4096"
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape --shapes $U \
    --kernels .kc/s27/abdir --out $R/benchU > $R/benchU.log 2>&1
echo "unseen bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchU/*.md | head -3
timeout $(( 560 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --per-shape --shapes $P --kernels .kc/s27/abdir --out $R/benchP > $R/benchP.log 2>&1
echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchP/*.md | head -3
cd $OUT && tar czf res.tgz res && rm -rf res
