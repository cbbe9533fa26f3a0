#!/bin/bash
# device call 5 (nvidia-h200), session 27: pytest -m gpu on the final code (every GPU test; builds carried); then a
# campaign of the public shape 1000^3 alone with h200-unseen-5's settings and seed_from without this session's
# benches, and one bench --per-shape at 1000^3 of its hall with the public record's six halls
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s29/gpu.txz | tar xf - -C /tmp/kc; xz -dc .kc/s29/k1000.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s29/HEAD
timeout 330 python -m pytest -m gpu -q -p no:cacheprovider --durations=5 tests/ > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
timeout -s INT -k 20 150 python -m experiments.cli run .kc/s29/dr/experiments/campaigns/k1000.yaml --out $R/k1000 \
    --no-live > $R/k1000-run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/k1000/campaign.log | cut -c1-220
rm -f $R/k1000/campaign.db-shm
H=.kc/s29/dr/docs/results
timeout $(( 590 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 1000x1000x1000 --kernels $R/k1000 $H/h200-public-5/campaign-A $H/h200-public-5/campaign-B \
    $H/h200-public-4/campaign-A $H/h200-public-4/campaign-B $H/h200-public-3/campaign-A $H/h200-public-3/campaign-B \
    --out $R/benchK1000 > $R/benchK1000.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchK1000/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
