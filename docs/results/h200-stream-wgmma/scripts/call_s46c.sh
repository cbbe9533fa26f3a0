#!/bin/bash
# session 46. On an H200 first: the skinny_tma call (../h200-tma-stream/scripts/call_s46.sh). On any GPU: evogemm
# bench of the stream_wgmma seeds at suite-s46.yaml (six vendor baselines, the gate) and its gpu tests, then the stream_wgmma
# prototype (call_s46b.sh) in what is left; on an H200 then the public-suite bench over the selection of recorded
# kernels (../h200-public-10/selection). Carry .kc/whl, .kc/s45/cache.txz, .kc/s46/swcache.txz, .kc/s46/cache.txz.
set -u
T0=$(date +%s)
H200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && H200=1
if [ $H200 = 1 ]; then
  mkdir -p $OUT/tma; OUT=$OUT/tma bash docs/results/h200-tma-stream/scripts/call_s46.sh
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
[ -d .kc/s46/swcache ] || tar xJf .kc/s46/swcache.txz -C .kc/s46
mkdir -p $OUT/swbench
timeout ${SWB:-200} python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/swcache --timing '{"repeats":5}' \
  --per-shape --suite docs/results/h200-stream-wgmma/suite-s46.yaml --kernels templates/stream_wgmma/seeds \
  --out $OUT/swbench > $OUT/swbench/bench.log 2>&1
echo "stream_wgmma bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean|error|Error" $OUT/swbench/bench.log | cut -c1-200 | head -40
EVOGEMM_CACHE=$PWD/.kc/s46/swcache timeout 120 python -m pytest -q -m gpu -rs tests/test_gpu_families.py -k stream_wgmma \
  > $OUT/swbench/pytest-gpu-stream-wgmma.log 2>&1
echo "pytest stream_wgmma rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $OUT/swbench/pytest-gpu-stream-wgmma.log
if [ $H200 = 1 ]; then
  [ -d .kc/s46/cache ] || tar xJf .kc/s46/cache.txz -C .kc/s46
  mkdir -p $OUT/pub
  LEFT=$(( ${LIMIT:-575} - ($(date +%s) - T0) ))
  timeout $LEFT python -m experiments.cli bench --modes device --cache $PWD/.kc/s46/cache --timing '{"repeats":5}' \
    --per-shape --suite public --kernels docs/results/h200-public-10/selection --out $OUT/pub > $OUT/pub/bench.log 2>&1
  echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/pub/bench.log | cut -c1-160
else
  LEFT=$(( ${LIMIT:-575} - ($(date +%s) - T0) ))
  [ $LEFT -gt 60 ] && { mkdir -p $OUT/sw; OUT=$OUT/sw LIMIT=$(( LEFT - 25 )) bash docs/results/h200-stream-wgmma/scripts/call_s46b.sh "$@"; }
fi
