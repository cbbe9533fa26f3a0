#!/bin/bash
# session 37, device call 7: one-wave sm90_lean tiles (128 x N, 1x1, the two N that fill most of the 132 SMs in one
# wave) against the first rounds as shipped, at the twelve unseen shapes of calls 4-6, every kernel at every shape.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
timeout 540 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s37/cache \
  --shapes 1664x1664x1664 1280x1280x1280 1000x2000x1000 1536x1536x1536 1200x1440x4096 640x3584x2048 896x2304x1536 \
           2304x768x2048 768x768x768 2048x1024x1024 1408x2816x1408 3072x1280x1024 \
  --kernels .kc/s37/wfbench --out $R/wf > $R/wf.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|^building" $R/wf.log; tail -n 3 $R/wf.log
