#!/bin/bash
# device call 4 (nvidia-h200, one GPU), session 27: the campaign experiments/campaigns/h200-unseen-5.yaml (eight
# shapes outside both suites and every earlier run, seven of them K-pitch; h200-unseen-4's settings, the measured
# cluster capacity in the simulator, the two clustered seeds), 400 s of wall, then one bench --per-shape of its
# halls at the eight shapes, interleaved with the six vendor baselines. First rounds' builds made on the CPU
# machine and carried (.kc/s29/u5.txz); mutants built here.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s29/u5.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s29/HEAD
timeout -s INT -k 20 430 python -m experiments.cli run .kc/s29/dr/experiments/campaigns/h200-unseen-5.yaml --out $R/campaign \
    --no-live > $R/campaign-run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/campaign/campaign.log | cut -c1-220
rm -f $R/campaign/campaign.db-shm
timeout $(( 590 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 1200x1200x1200 2000x2000x2000 6000x2000x1000 1000x4000x3000 4000x4000x5000 512x2000x1800 3000x1000x6000 \
             2048x2048x8192 \
    --kernels $R/campaign --out $R/benchU5 > $R/benchU5.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchU5/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
