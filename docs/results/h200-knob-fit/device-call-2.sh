#!/bin/bash
# device call 2 (nvidia-h200, one GPU), session 25: the campaign experiments/campaigns/h200-unseen-2.yaml again,
# unchanged, on a tree where seeds take their shape knobs fitted by the family models (population.fit_knobs,
# on by default). Session 24 ran it without (docs/results/h200-unseen-2/campaign). First rounds' builds carried
# (.kc/s27/call.txz); mutants are built here and brought back (kc-new.tgz) for the bench of the next call.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s27/call.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l; touch /tmp/kc/.marker
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
git log --oneline | head -1; git status --short | grep -v '^?? .kc' | head -20
timeout -s INT -k 20 $(( 575 - ($(date +%s) - T0) )) python -m experiments.cli run \
    experiments/campaigns/h200-unseen-2.yaml --out $R/campaign --no-live > $R/campaign-run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/campaign/campaign.log | cut -c1-220
rm -f $R/campaign/campaign.db-shm
cd /tmp/kc && find . -newer .marker -type f \( -name kernel.so -o -name meta.json \) | tar czf $OUT/kc-new.tgz -T - 2>/dev/null
ls -la $OUT/kc-new.tgz
cd $OUT && tar czf res.tgz res && rm -rf res
