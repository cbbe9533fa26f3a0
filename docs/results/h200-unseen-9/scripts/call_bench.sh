#!/bin/bash
# session 39 (to run), the third device call: one bench of both arms' halls of fame (the four campaign folders of calls 1 and 2) at
# the eight shapes, per shape, interleaved with the six vendor baselines; then the kernels cuBLAS runs there.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s39 && tar xJf .kc/s39/cache.txz -C .kc/s39 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s39/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
S="1792x2304x4096 1536x2560x6144 2560x1536x1024 1920x1920x3072 2304x2048x8192 3072x1536x4096 1408x3328x2048 1664x2048x5120"
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s39/cache --per-shape \
  --shapes $S --kernels .kc/s39/camp-a1 .kc/s39/camp-a2 .kc/s39/camp-b1 .kc/s39/camp-b2 --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|^building" $R/bench.log | head; tail -n 4 $R/bench.log
timeout 60 python3 .kc/s39/vendor_kernels.py $R/vendor-kernels.json $S > $R/vendor-kernels.log 2>&1
echo "vendor kernels rc=$? at $(( $(date +%s) - T0 )) s"
