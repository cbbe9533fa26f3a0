#!/bin/bash
# session 37, device call 4: the model-seed check: the first-round genomes of a campaign with h200-unseen-7's
# settings at six unseen shapes (kernels/msA) and the simulator's picks from the whole space of sm90_cutlass and
# sm90_lean (kernels/msB), every kernel at every shape, one evogemm bench.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
timeout 500 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s37/cache \
  --shapes 1536x1536x1536 1200x1440x4096 1280x1280x1280 768x768x768 1000x2000x1000 2048x1024x1024 \
  --kernels .kc/s37/msA .kc/s37/msB --out $R/ms > $R/ms.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|^building" $R/ms.log; tail -n 3 $R/ms.log
