#!/bin/bash
# session 36, device call 3: the campaign experiments/campaigns/h200-unseen-7.yaml (space revision 4; six shapes outside
# both suites and every earlier run; 400 s of wall on one GPU), then one bench --per-shape of its halls of fame,
# interleaved with the six vendor baselines. First-round builds made on the CPU machine and carried (u7.txz); mutants
# built here (16 cores). seed_from's files carried as dr.txz at their paths relative to the campaign file.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=/tmp/res; mkdir -p $R /tmp/kc /tmp/dr; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
xz -dc .kc/s36c/u7.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
xz -dc .kc/s36c/dr.txz | tar xf - -C /tmp/dr
git log --oneline | head -1 > $R/HEAD 2>/dev/null
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader > $R/gpu.txt
timeout -s INT -k 20 440 python -m experiments.cli run /tmp/dr/experiments/campaigns/h200-unseen-7.yaml \
    --out $R/campaign --no-live > $R/campaign-run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/campaign/campaign.log | cut -c1-220; rm -f $R/campaign/campaign.db-shm
SH="1280x1280x2048 1344x1600x1024 1200x1440x4096 1024x1536x1536 1408x1152x768 960x1680x2560"
timeout $(( 590 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device \
    --timing '{"repeats":5}' --per-shape --shapes $SH --kernels $R/campaign --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/bench/*.md | head -4
