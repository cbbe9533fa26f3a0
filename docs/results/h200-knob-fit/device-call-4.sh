#!/bin/bash
# device call 4 (nvidia-h200, one GPU), session 25: the campaign experiments/campaigns/h200-unseen-4.yaml (ten
# shapes outside both suites and every earlier run; h200-unseen-2's settings, seeds' shape knobs fitted), 480 s
# of wall, then one bench --per-shape of its halls at the ten shapes, interleaved with the six vendor baselines.
# First rounds' builds made on the CPU machine and carried (.kc/s27/u4.txz); mutants built here.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s27/u4.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
git status --short | grep -v '^?? .kc' | head -5
timeout -s INT -k 20 500 python -m experiments.cli run experiments/campaigns/h200-unseen-4.yaml --out $R/campaign \
    --no-live > $R/campaign-run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/campaign/campaign.log | cut -c1-220
rm -f $R/campaign/campaign.db-shm
timeout $(( 590 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 2x8960x1536 32x4096x4096 200x1536x8960 256x256x65536 768x768x3072 1536x1536x1536 2304x2304x9216 \
             1024x18432x7168 4096x3584x3584 5000x1000x3000 \
    --kernels $R/campaign --out $R/benchU4 > $R/benchU4.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchU4/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
