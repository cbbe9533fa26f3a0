#!/bin/bash
# device call C (nvidia-h200, one GPU), session 20: tiles whose N has no base WGMMA (80, 112, 144, 160,
# 176, 224, 240), now built with CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED, against the halls' best kernels
# at the shapes where we lose most; one bench, every kernel at every shape, interleaved with the six
# vendor baselines. Builds made on the CPU machine and carried.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s20/waveC.txz | tar xf - -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
timeout 420 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 1536x1536x6144 5120x1280x5120 10240x2560x2560 640x14336x2048 768x2048x8192 3072x3072x3072 \
             128x28672x4096 4096x1024x1024 2048x2048x2048 8192x8192x1024 256x12288x4096 \
    --kernels docs/results/h200-wave-tiles-2/kernels --out $R/benchC > $R/benchC.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchC/*.md | head -3
cd $OUT && tar czf res.tgz res && rm -rf res
