#!/bin/bash
# session 46, second stream_wgmma call (the device budget was short). On an H200: the skinny_tma call
# (../../h200-tma-stream/scripts/call_s46.sh: probe, bench, edge test), the stream_wgmma seeds' bench, then the
# public re-bench over ../../h200-public-10/selection in what is left of LIMIT. On any other GPU: the prototype's
# diagnostics: the best configurations of the first call, each also with its k loops rotated, without its wgmma,
# without its Y loads and without both (stream_wgmma.py, DIAG), at three shapes.
# Carry .kc/whl, .kc/s45/cache.txz, .kc/s46/cache.txz, .kc/s46/swcache.txz.
set -u
T0=$(date +%s)
S=docs/results/h200-stream-wgmma/scripts
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  mkdir -p $OUT/tma; OUT=$OUT/tma bash docs/results/h200-tma-stream/scripts/call_s46.sh
  export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
  tar xJf .kc/s46/swcache.txz -C .kc/s46; tar xJf .kc/s46/cache.txz -C .kc/s46
  mkdir -p $OUT/swbench $OUT/pub
  timeout 60 python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/swcache --timing '{"repeats":5}' \
    --per-shape --suite docs/results/h200-stream-wgmma/suite-s46.yaml --kernels templates/stream_wgmma/seeds \
    --out $OUT/swbench > $OUT/swbench/bench.log 2>&1
  echo "stream_wgmma bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/swbench/bench.log | cut -c1-160
  LEFT=$(( ${LIMIT:-480} - ($(date +%s) - T0) ))
  timeout $LEFT python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/cache --timing '{"repeats":5}' \
    --per-shape --suite public --kernels docs/results/h200-public-10/selection --out $OUT/pub > $OUT/pub/bench.log 2>&1
  echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/pub/bench.log | cut -c1-160
  exit 0
fi
nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 -Xcompiler=-fPIC -shared -I$S -o /tmp/sw.so $S/stream_wgmma.cu || exit 7
for spec in "128x4096x14336|64,128,1,8,2;128,128,2,3,4;128,128,1,6,4" "128x28672x4096|128,128,1,6,1;128,128,2,3,1;64,128,1,8,1" \
            "32x8192x8192|64,64,2,6,1;128,64,1,8,1"; do
  DIAG="${spec#*|}" timeout 60 python3 $S/stream_wgmma.py /tmp/sw.so $OUT/diag-${spec%%|*}.json ${spec%%|*} 2>&1 | tee -a $OUT/diag.log
done
echo "done at $(( $(date +%s) - T0 )) s"
