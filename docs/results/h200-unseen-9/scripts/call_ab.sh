#!/bin/bash
# session 39 (to run): the A/B of population.wave_cooperative at eight unseen shapes (h200-unseen-9-a/-b.yaml:
# h200-unseen-8-b's settings, arm B with wave_cooperative true). Each call runs one half of the shapes in both arms, 240 s of
# wall each (campaign folders created on the CPU machine, first-round kernels prebuilt there and carried).
# usage: call_ab.sh HALF FIRST SECOND   (e.g. 1 a b, then 2 b a: the arms alternate which goes first)
set -u
H=$1; T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s39 && tar xJf .kc/s39/cache.txz -C .kc/s39 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s39/cache
R=/tmp/res; mkdir -p $R; trap "cp -r .kc/s39/camp-?$H $R/ 2>/dev/null; tar czf $OUT/res.tgz -C /tmp res" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
for arm in $2 $3; do
  timeout 275 python -m experiments.cli resume .kc/s39/camp-$arm$H > $R/camp-$arm$H.log 2>&1
  echo "campaign $arm$H rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/camp-$arm$H.log
done
