#!/bin/bash
# device call 6 (nvidia-h200, one GPU), session 24: pytest -m gpu on the final tree; then, in the time left,
# a bench --per-shape of the public halls (h200-public-5, -7) at the four public shapes over 1 ms with 9
# rounds instead of 5, to see how the A/A range there grows with the rounds. Builds carried.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
for f in .kc/s26/gpu.txz .kc/s26/big.txz; do xz -dc $f | tar xf - -C /tmp/kc; done; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
timeout 320 python -m pytest -m gpu -q -p no:cacheprovider --durations=8 tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/pytest-gpu.log
timeout $(( 500 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":9}' \
    --per-shape --shapes 8192x8192x8192 16384x4096x16384 12288x12288x12288 8192x10240x8192 \
    --kernels docs/results/h200-public-5/campaign-A docs/results/h200-public-5/campaign-B \
              docs/results/h200-public-7/campaign-A docs/results/h200-public-7/campaign-B \
    --out $R/benchAA > $R/benchAA.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchAA/*.md | head -3
cd $OUT && tar czf res.tgz res && rm -rf res
