#!/bin/bash
# device call 1 (nvidia-h200, one GPU), session 24: (a) multicast clusters of small ws tiles at shapes whose
# K rows are 2000 bytes (K = 1000: the TMA pitch penalty, ../h200-k-pitch); (b) explicit epilogue subtiles of
# N 48/80/112 for the tiles fitted to the SM count (N 80, 112, 144, 224, 240), against their auto twins and
# the halls' best kernels. Two benches, every kernel at every shape, interleaved with the six vendor baselines.
# Builds made on the CPU machine and carried (.kc/s24/call1.txz).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s24/call1.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
timeout 200 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 1000x1000x1000 1024x1024x1000 1008x1008x1008 2000x2000x1000 1000x1000x3000 \
    --kernels .kc/s24/k-pitch --out $R/benchPitch > $R/benchPitch.log 2>&1
echo "pitch bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchPitch/*.md | head -3
timeout $(( 560 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 1536x1536x6144 5120x1280x5120 10240x2560x2560 640x14336x2048 768x2048x8192 3072x3072x3072 \
             128x28672x4096 8192x8192x1024 256x12288x4096 \
    --kernels .kc/s24/k-subtile .kc/s24/k-refs --out $R/benchSub > $R/benchSub.log 2>&1
echo "subtile bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchSub/*.md | head -3
cd $OUT && tar czf res.tgz res && rm -rf res
