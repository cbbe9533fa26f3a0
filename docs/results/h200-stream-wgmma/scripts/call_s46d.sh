#!/bin/bash
# session 46, second stream_wgmma call: on an H200 first call_s46c.sh (skinny_tma, the family's bench, the public
# re-bench); on any GPU then the prototype's diagnostics: the best configurations of the first call, each also
# without its wgmma, without its Y loads and without both (stream_wgmma.py, DIAG), at three shapes.
set -u
T0=$(date +%s)
S=docs/results/h200-stream-wgmma/scripts
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  mkdir -p $OUT/c; OUT=$OUT/c LIMIT=470 bash $S/call_s46c.sh
fi
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xcompiler=-fPIC -shared -I$S -o /tmp/sw.so $S/stream_wgmma.cu || exit 7
for spec in "128x4096x14336|64,128,1,8,2;128,128,2,3,4;128,128,1,6,4" "128x28672x4096|128,128,1,6,1;128,128,2,3,1;64,128,1,8,1" \
            "32x8192x8192|64,64,2,6,1;128,64,1,8,1"; do
  DIAG="${spec#*|}" timeout 60 python3 $S/stream_wgmma.py /tmp/sw.so $OUT/diag-${spec%%|*}.json ${spec%%|*} 2>&1 | tee -a $OUT/diag.log
done
echo "done at $(( $(date +%s) - T0 )) s"
