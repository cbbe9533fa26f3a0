#!/bin/bash
# device call 2 (nvidia-h200, one GPU), session 23: one bench --per-shape over the 28 public shapes, each
# timing the union of this session's public campaign's halls (h200-public-7) and the three runs' behind the
# 1.017x record (h200-public-5, -4, -3), interleaved with the six vendor baselines; then pytest -m gpu on
# this tree. Builds: every hall kernel and every GPU test's kernel, built before (CPU machine, call 1), xz.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c2/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s23/c2/bench.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --suite public --per-shape \
    --kernels docs/results/h200-public-7/campaign-A docs/results/h200-public-7/campaign-B \
              docs/results/h200-public-5/campaign-A docs/results/h200-public-5/campaign-B \
              docs/results/h200-public-4/campaign-A docs/results/h200-public-4/campaign-B \
              docs/results/h200-public-3/campaign-A docs/results/h200-public-3/campaign-B \
    --out $R/benchPub > $R/benchPub.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchPub/*.md | head -3
timeout $(( 585 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider --durations=12 tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
