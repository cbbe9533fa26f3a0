#!/bin/bash
# session 45, call 2: the skinny_tma prototype against torch.mm and the read probe
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
S=docs/results/h200-tma-stream/scripts
F="-gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xcompiler=-fPIC -shared"
nvcc $F -o /tmp/tma_stream.so $S/tma_stream.cu & nvcc $F -o /tmp/skinny_tma.so $S/skinny_tma.cu; wait
echo "built at $(( $(date +%s) - T0 )) s"
timeout 300 python3 $S/skinny_tma.py /tmp/skinny_tma.so /tmp/tma_stream.so $OUT/skinny_tma.json 2>&1 | tee $OUT/skinny_tma.log
echo "skinny rc=${PIPESTATUS[0]} at $(( $(date +%s) - T0 )) s"
