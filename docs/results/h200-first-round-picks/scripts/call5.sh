#!/bin/bash
# session 37, device call 5: population.cross_screen out of sample: the first rounds of a campaign with h200-unseen-7's
# settings at six more unseen shapes without (arm A) and with cross_screen 4 (arm B), every kernel at every shape.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
timeout 500 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s37/cache \
  --shapes 1664x1664x1664 896x2304x1536 2304x768x2048 1408x2816x1408 640x3584x2048 3072x1280x1024 \
  --kernels .kc/s37/xs --out $R/xs > $R/xs.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|^building" $R/xs.log; tail -n 3 $R/xs.log
