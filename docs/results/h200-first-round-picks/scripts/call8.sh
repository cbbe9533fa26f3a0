#!/bin/bash
# session 37, device call 8: population.wave_seeds end to end on the GPU: two campaigns (created on the CPU machine
# with h200-unseen-7's settings at three unseen shapes, 40 evaluations a shape, 130 s of wall each), arm A as
# shipped and arm B with wave_seeds 2, run one after the other; then one bench of both halls of fame, per shape.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "cp -r .kc/s37/ab $R/ 2>/dev/null; tar czf $OUT/res.tgz -C /tmp res" EXIT
for arm in A B; do
  timeout 200 python -m experiments.cli resume .kc/s37/ab/camp-$arm > $R/camp-$arm.log 2>&1
  echo "campaign $arm rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $R/camp-$arm.log
done
timeout 90 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s37/cache --per-shape \
  --shapes 1664x1664x1664 640x3584x2048 1280x1280x1280 --kernels .kc/s37/ab/camp-A .kc/s37/ab/camp-B \
  --out $R/halls > $R/halls.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[" $R/halls.log; tail -n 3 $R/halls.log
