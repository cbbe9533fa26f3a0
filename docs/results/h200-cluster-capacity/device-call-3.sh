#!/bin/bash
# device call 3 (nvidia-h200), session 27: how many thread-block clusters of each size this H200 runs at
# once (cudaOccupancyMaxActiveClusters, and a timed wave of n and n+1 clusters); variants of the sm90_lean
# 64x160 tile with a 4x1 cluster (the best at 1000^3 in call 2) at six shapes
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s29/v160.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s29/HEAD
nvcc -arch=sm_90a -O2 -o /tmp/occ .kc/s29/occ/occ.cu && /tmp/occ > $R/clusters.json; cat $R/clusters.json
timeout 200 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 1000x1000x1000 1024x1024x1000 1008x1008x1008 1000x1000x2000 2000x1000x1000 768x768x768 \
    --kernels .kc/s29/v160k --out $R/benchV160 > $R/benchV160.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchV160/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
