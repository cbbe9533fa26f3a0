#!/bin/bash
# session 39 (to run): tile N 72, the vendor's tile at 1000^3 (nvjet_sm90_hsh_72x128_64x8_2x4), as sm90_lean 128x72
# through the B-padded collective (../pad_b_collective.hpp), gated and timed against its 128x80 twins and the records'
# best kernels at seven K-pitch and small shapes. Kernels built on the CPU machine (cache72.txz) and carried with the
# wheels: carry .kc/whl and .kc/s39 (cache72.txz, kernels/ copied from docs/results/h200-tile-n72/kernels).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s39 && tar xJf .kc/s39/cache72.txz -C .kc/s39 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s39/cache72
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 400 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s39/cache72 --per-shape \
  --shapes 1000x1000x1000 1024x1024x1000 1008x1008x1008 1000x1000x2000 1000x2000x1000 2000x2000x1000 1024x1024x1024 \
  --kernels .kc/s39/kernels/tile72 .kc/s39/kernels/twins80 .kc/s39/kernels/refs --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -iE "gate|wrong|fail|hang" $R/bench.log | head -5; tail -n 4 $R/bench.log
