#!/bin/bash
# device call 5 (nvidia-h200, one GPU), session 24: skinny_mma with a per-thread cp.async ring (`stages`)
# against the register-streaming kernels (the halls' best at the decode shapes), every kernel at every
# shape, interleaved with the six vendor baselines. 16x1000x4104: partial row tile and a partial k chunk
# (correctness). Builds made on the CPU machine and carried.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s25/ring.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 16x6144x4096 16x4096x14336 12x3584x3584 8x16384x5120 1x8192x8192 8x14336x4096 32x4096x4096 16x1000x4104 \
    --kernels .kc/s25/k-ring --out $R/benchRing > $R/benchRing.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchRing/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
