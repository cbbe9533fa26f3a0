#!/bin/bash
# Session 57, one device call (call_s56.sh of commit 0350345, which it replaces, with Y's 8-row boxes where Y has at
# most 8 rows: the template of this commit, its skinny_tma builds in .kc/s57cache.txz; two more probe shapes at K =
# 8192, where only 8-row Y fits; the public bench before the probe, so that a short budget spends itself on the record
# first). On any GPU: skinny_tma's gpu tests (its seeds, edge configurations and the y_resident configurations at the
# shapes of tests/test_gpu_families.py), then one `evogemm bench` of ../kernels (the y_resident probes, their non-
# resident twins, the best recorded kernels at these decode shapes) at twelve decode shapes, all six vendor baselines
# interleaved. On an H200 also the public bench of ../../h200-tilek128/scripts/call_s55.sh (the record's command: its
# kernels include ../../h200-tilek128/probe) with ../kernels added, unless SKIP_PUB is set. Carry .kc/whl,
# .kc/s55/cache.txz and .kc/s57cache.txz (or name other kernel caches in CACHES); LIMIT_S (default 480): the call's
# limit, the public bench and the probe cut to what is left of it; SKIP_TESTS=1 skips the gpu tests.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if ! grep -q H200 $OUT/gpu.txt && [ -n "${H100_DONE:-}" ]; then echo "not an H200 (H100_DONE): nothing"; exit 0; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && for t in ${CACHES:-.kc/s55/cache.txz .kc/s57cache.txz}; do tar xJf $t -C $C || exit 8; done
P=docs/results/h200-public-10 Y=docs/results/skinny-y-resident
mkdir -p $OUT/r/probe $OUT/r/pub
if [ -z "${SKIP_TESTS:-}" ]; then
EVOGEMM_CACHE=$C timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_families.py -k skinny_tma \
  > $OUT/r/pytest-skinny-tma.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/r/pytest-skinny-tma.log)"
fi
if grep -q H200 $OUT/gpu.txt && [ -z "${SKIP_PUB:-}" ]; then
  PUB_S=${PUB_S:-$(( ${LIMIT_S:-480} - ($(date +%s) - T0) - 10 ))}
  timeout $PUB_S python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
    --per-shape --suite public --kernels $P/selection docs/results/h200-tilek128/probe $Y/kernels $P/public-mirrors $P/public-mirrors-v2-new \
    docs/results/h200-mirrors-rev2/mirrors-new docs/results/splitk-two-ctas/kernels/sm90_swapab_splitk-eb37e6ad.json \
    --out $OUT/r/pub > $OUT/r/pub/bench.log 2>&1
  echo "public bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean" $OUT/r/pub/bench.log | cut -c1-160
fi
LEFT=$(( ${LIMIT_S:-480} - ($(date +%s) - T0) - 15 )); [ $LEFT -gt 200 ] && LEFT=200
if [ $LEFT -gt 30 ]; then timeout $LEFT python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
  --shapes 16x6144x4096 8x14336x4096 4x12288x4096 1x14336x4096 16x4096x4096 1x4096x4096 16x11008x4096 \
  16x2048x4096 6144x16x4096 16x8192x2048 1x8192x8192 8x8192x8192 --kernels $Y/kernels --out $OUT/r/probe > $OUT/r/probe/bench.log 2>&1
echo "probe bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "geomean" $OUT/r/probe/bench.log | cut -c1-160; fi
cd $OUT && tar czf results.tgz --exclude=gpu0-worker.log r && rm -rf r
