#!/bin/bash
# session 46, the stream_wgmma prototype: build, check against fp32, time against torch.mm (stream_wgmma.py)
set -u
T0=$(date +%s)
S=docs/results/h200-stream-wgmma/scripts
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xcompiler=-fPIC -shared -I$S -o /tmp/sw.so $S/stream_wgmma.cu || exit 7
echo "built at $(( $(date +%s) - T0 )) s"
timeout ${LIMIT:-240} python3 $S/stream_wgmma.py /tmp/sw.so $OUT/stream_wgmma.json "$@" 2>&1 | tee $OUT/stream_wgmma.log
echo "rc=${PIPESTATUS[0]} at $(( $(date +%s) - T0 )) s"
