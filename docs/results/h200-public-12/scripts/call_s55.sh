#!/bin/bash
# Not run: session 55 ran ../../h200-tilek128/scripts/call_s55.sh instead (the same bench plus tile_k 128 probes).
# Prepared in session 54 for the next H200 (on any other GPU it stops at once): the public bench of this folder
# (../../h200-mirrors-rev2/scripts/call_s50b.sh's kernels: each shape's recorded best, the two H100-pick mirror sets,
# the H200-pick mirrors) plus sm90_swapab_splitk eb37e6ad (ws 64x128x64, automatic stages, K split 4 ways, pdl, the
# grouped reduction), timed at every shape: at 512x512x16384 it read 1.032x and 1.033x the vendor in two benches of
# ../../splitk-two-ctas/h200-s54, where the record's kernel read 0.999x and 0.994x. Then, in what is left of LIMIT_S,
# the A/A check (../../aa-median-interval/scripts/aa_check.sh). Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/rev2.txz,
# .kc/s54/tcache.txz.
set -u
T0=$(date +%s); LIMIT_S=${LIMIT_S:-560}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if ! grep -q H200 $OUT/gpu.txt; then echo "not an H200: nothing"; exit 0; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=$PWD/.kc/s55cache; mkdir -p $C && tar xJf .kc/s48/pcache.txz -C /tmp && cp -rn /tmp/pcache/. $C/ && \
  tar xJf .kc/s49/rev2.txz -C $C && tar xJf .kc/s54/tcache.txz -C $C || exit 8
P=docs/results/h200-public-10
mkdir -p $OUT/r/pub
timeout ${PUB_S:-300} python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
  --per-shape --suite public --kernels $P/selection $P/public-mirrors $P/public-mirrors-v2-new \
  docs/results/h200-mirrors-rev2/mirrors-new docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json \
  --out $OUT/r/pub > $OUT/r/pub/bench.log 2>&1
echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean" $OUT/r/pub/bench.log | cut -c1-160
T0=$T0 MIN_S=60 bash docs/results/aa-median-interval/scripts/aa_check.sh $(( T0 + LIMIT_S - 20 )) $C $OUT/r aa1 aa2
cd $OUT && tar czf results.tgz --exclude=gpu0-worker.log r && rm -rf r
