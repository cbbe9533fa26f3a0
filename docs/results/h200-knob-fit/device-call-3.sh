#!/bin/bash
# device call 3 (nvidia-h200, one GPU), session 25: one bench --per-shape of the two h200-unseen-2 runs' halls
# of fame (session 24 without knob fitting: h200-unseen-2/campaign; this session with it: h200-unseen-3/campaign)
# at the ten shapes, interleaved with the six vendor baselines; then pytest -m gpu on this tree. Builds carried
# (.kc/s27/c3.txz: both runs' halls, every GPU test's kernel).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s27/c3.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
git log --oneline | head -1; git status --short | grep -v '^?? .kc' | head -5
timeout 250 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 12x3584x3584 8x16384x5120 96x4096x14336 384x3072x8192 640x640x12288 1280x3584x18944 \
             1792x7168x2048 2560x2560x10240 3000x2000x1504 4608x4608x1536 \
    --kernels docs/results/h200-unseen-2/campaign docs/results/h200-unseen-3/campaign --out $R/benchU3 > $R/benchU3.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchU3/*.md | head -4
timeout $(( 585 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider --durations=12 tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
