#!/bin/bash
# session 38, device call 3: one bench of both arms' halls of fame (the four campaign folders of calls 1 and 2) at
# the eight shapes, per shape, interleaved with the six vendor baselines; then the kernels cuBLAS runs there.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s38 && tar xJf .kc/s38/cache.txz -C .kc/s38 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s38/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
S="1792x1792x1792 1152x3072x2048 1920x1280x3072 1024x2560x2560 2560x1024x4096 1536x2048x1024 768x4096x2048 1280x2304x1536"
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s38/cache --per-shape \
  --shapes $S --kernels .kc/s38/camp-a1 .kc/s38/camp-a2 .kc/s38/camp-b1 .kc/s38/camp-b2 --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|^building" $R/bench.log | head; tail -n 4 $R/bench.log
timeout 60 python3 .kc/s38/vendor_kernels.py $R/vendor-kernels.json $S > $R/vendor-kernels.log 2>&1
echo "vendor kernels rc=$? at $(( $(date +%s) - T0 )) s"
