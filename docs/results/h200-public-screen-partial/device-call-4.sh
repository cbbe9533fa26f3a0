#!/bin/bash
# device call 4 (nvidia-h200, one GPU): one bench --per-shape over the 19 public shapes the screen
# campaign (call 3) finished, each timing the union of that campaign's hall of fame and the previous
# campaign's (docs/results/h200-public-3), interleaved with the six vendor baselines
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
tar xzf .kc/s19b/cache-halls-pub.tgz -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv,noheader
timeout 330 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --shapes 1024x1024x1024 1024x4096x12288 12288x12288x12288 128x128x128 128x28672x4096 128x4096x4096 16384x4096x16384 16x4096x14336 16x6144x4096 2048x2048x2048 256x12288x4096 256x4096x256 4096x1024x1024 4096x8192x4096 512x512x16384 64x64x4096 8192x64x8192 8192x8192x1024 8192x8192x8192 \
    --per-shape --kernels docs/results/h200-public-screen-partial/campaign-A docs/results/h200-public-screen-partial/campaign-B docs/results/h200-public-3/campaign-A docs/results/h200-public-3/campaign-B \
    --out $R/benchPub > $R/benchPub.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchPub/*.md | head -3
cd $OUT && tar czf res.tgz res && rm -rf res
