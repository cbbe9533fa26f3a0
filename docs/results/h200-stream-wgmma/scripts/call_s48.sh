#!/bin/bash
# prepared in session 47, not run: the prototype with a grid over the small side (stream_wgmma.cu's small-side
# tiles, SMALL_GRID=1 in stream_wgmma.py: MT 64 at M = 128 puts two CTAs on each weight block, each over the whole
# K, no partials) against its K-split configurations and torch.mm, at the shapes whose small side exceeds 64. Any
# Hopper GPU (about a minute); the harness is the prototype's, so compare within it. No wheels needed.
set -u
T0=$(date +%s)
S=docs/results/h200-stream-wgmma/scripts
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xcompiler=-fPIC -shared -o /tmp/sw.so $S/stream_wgmma.cu 2> $OUT/nvcc.log || exit 7
SMALL_GRID=1 timeout 240 python3 $S/stream_wgmma.py /tmp/sw.so $OUT/small-grid.json 128x4096x14336 128x4096x4096 \
  128x28672x4096 256x12288x4096 256x4096x14336 200x8192x3000 2>&1 | tee $OUT/small-grid.log
echo "done at $(( $(date +%s) - T0 )) s"
