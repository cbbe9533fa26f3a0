#!/bin/bash
# session 37, device call 6: the model picks out of sample: call 5's first rounds (arms A and B) and the simulator's
# picks for the same six shapes (kernels/xsM), every kernel at every shape.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
timeout 500 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s37/cache \
  --shapes 1664x1664x1664 896x2304x1536 2304x768x2048 1408x2816x1408 640x3584x2048 3072x1280x1024 \
  --kernels .kc/s37/xsAM --out $R/xm > $R/xm.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|^building" $R/xm.log; tail -n 3 $R/xm.log
