#!/bin/bash
# device call 1 (nvidia-h200), session 27: TMA L2 promotion 128 (CUTLASS's) vs 256 vs none, on the halls' best
# kernels at four K-pitch shapes (rows of A and W not whole 128-byte lines) and nine aligned public shapes
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s29/l2.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s29/HEAD
timeout 480 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape --shapes 1000x1000x1000 1024x1024x1000 1008x1008x1008 5000x1000x3000 2048x2048x2048 4096x1024x1024 128x28672x4096 8192x8192x1024 256x12288x4096 512x512x16384 1024x1024x1024 128x4096x4096 4096x8192x4096 \
    --kernels .kc/s29/l2k --out $R/benchL2 > $R/benchL2.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchL2/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
