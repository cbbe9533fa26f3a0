#!/bin/bash
# device call 6 (nvidia-h200), session 34: tile K 32 for the clustered sm90_lean tiles at 1000^3 (the session-27
# screen had tile K 64 only), against the best of that screen (d4b47749, 64x160x64 c4x1), at 1000^3 and 1024^3.
# (It read the kernels from .kc/k32, a copy of kernels/, and the new builds from .kc/s34/k32-new.tar.xz.)
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p .kc/c && tar xJf .kc/halls-cache-public.tar.xz -C .kc/c --strip-components=1 && tar xJf .kc/s34/k32-new.tar.xz -C .kc/c --strip-components=1 || exit 8
R=$OUT/res; mkdir -p $R
EVOGEMM_CACHE=$PWD/.kc/c timeout 120 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
  --shapes 1000x1000x1000 1024x1024x1024 --kernels .kc/k32 --out $R/benchK32 > $R/benchK32.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep "^\[" $R/benchK32.log
cd $OUT && tar czf res.tgz res && rm -rf res
