#!/bin/bash
# session 35, device call B: evogemm bench of the skinny decode seeds, old (blocked K splits, 256-byte prefetch) and
# new (interleaved, 128 bytes), each at cluster_k 1, 2, 4, at the public decode shapes and six outside both suites.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
R=$OUT/res; mkdir -p $R
timeout 500 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s35/bcache \
  --shapes 16x4096x14336 16x6144x4096 1x8192x8192 8x14336x4096 4x12288x4096 12x3584x3584 16x14336x4096 8x16384x5120 \
  --kernels .kc/s35/bkernels --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 5 $R/bench.log
