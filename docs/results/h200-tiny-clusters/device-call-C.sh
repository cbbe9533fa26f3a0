#!/bin/bash
# device call C (nvidia-h200, one GPU), session 21: cluster shapes the campaigns left unmeasured -- sm90_lean
# 64xN / 128xN tiles with clusters of 2-8 CTAs at the tiny shapes, sm90_cutlass 128x128 ping-pong with
# clusters, 128x224/256 cooperative with clusters -- against the halls' best kernels; one bench, every kernel
# at every shape, interleaved with the six vendor baselines. Builds made on the CPU machine and carried.
# Then the gpu test of two shapes in flight on the one GPU.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s21/callC.txz | tar xf - -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
timeout 200 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 1000x1000x1000 1024x1024x1024 96x3072x768 256x4096x256 128x4096x4096 768x768x768 1280x1280x1280 \
    --kernels docs/results/h200-tiny-clusters/kernels/tiny --out $R/benchTiny > $R/benchTiny.log 2>&1
echo "bench tiny rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchTiny/*.md | head -2
timeout 240 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 2048x2048x2048 4096x1024x1024 8192x8192x1024 128x28672x4096 1536x1536x1536 3072x1024x2048 \
    --kernels docs/results/h200-tiny-clusters/kernels/mid --out $R/benchMid > $R/benchMid.log 2>&1
echo "bench mid rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchMid/*.md | head -2
timeout $(( 570 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu.py -k in_flight -s > $R/pytest-inflight.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $R/pytest-inflight.log
cd $OUT && tar czf res.tgz res && rm -rf res
