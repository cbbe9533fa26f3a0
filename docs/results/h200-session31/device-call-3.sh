#!/bin/bash
# device call 3 (nvidia-h200), session 31: prototype cluster split-K (DSMEM reduction) vs torch.matmul.
# .kc/proto/ held this folder's clusterk-prototype/ files and libclusterk.so built from clusterk.cu on the CPU machine:
#   nvcc -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -I$CUTLASS/include -Xcompiler -fPIC -shared -o libclusterk.so clusterk.cu
# (runs 1-2 used SKIP=4,6 and nine shapes; run 3 the line below)
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
SKIP=4 timeout 400 python .kc/proto/bench_proto.py 512x512x16384,640x640x12288,200x1536x8960,1024x1024x8192,1792x1792x4096,128x4096x4096,256x256x65536 2>&1 | grep -E "BEST|rc|Error|error" | head -60
