#!/bin/bash
# device call 3 (nvidia-h200, one GPU), session 22: the epilogue subtile (CUTLASS's EpilogueTileAuto: 64x32
# for ping-pong and ws, 128x32 for cooperative) set larger by a patch of the `epilogue` block, on the public
# halls' best builds, at the shapes where they lose or tie and three the swapab A/B lost at; every kernel at
# every shape, interleaved with the six vendor baselines. Then the whole pytest -m gpu.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s22/call3.txz | tar xf - -C /tmp/kc; ls /tmp/kc/*/ | wc -l
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
D=docs/results/h200-epilogue-tile
timeout 150 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 2048x2048x2048 4096x1024x1024 1024x4096x12288 8192x8192x1024 4096x8192x4096 128x28672x4096 \
             256x12288x4096 512x8192x28672 1024x1024x1024 256x4096x256 3328x3328x1024 2816x640x5120 5632x1024x4096 \
    --kernels $D/kernels/epi $D/kernels/ref --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/bench/*.md | head -5
timeout $(( 585 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider --durations=12 tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
