#!/bin/bash
# session 45, call 1: the TMA streaming probe (docs/results/h200-tma-stream/scripts)
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
S=docs/results/h200-tma-stream/scripts
nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xcompiler=-fPIC -shared -o /tmp/tma_stream.so $S/tma_stream.cu || exit 7
echo "built at $(( $(date +%s) - T0 )) s"
timeout 400 python3 $S/tma_stream.py /tmp/tma_stream.so $OUT/tma_stream.json 2>&1 | tee $OUT/tma_stream.log
echo "probe rc=${PIPESTATUS[0]} at $(( $(date +%s) - T0 )) s"
