#!/bin/bash
# device call 4 (nvidia-h200, one GPU), session 24: (1) the public campaign's settings on the two public
# shapes where call 1 measured new seeds faster than the record's halls (128x28672x4096, 1000^3), 150 s of
# wall; (2) one bench --per-shape over the 28 public shapes, each timing the union of that campaign's halls
# and the four runs' behind the record and the latest bench (h200-public-7, -5, -4, -3), interleaved with
# the six vendor baselines. Builds: the halls' and the two shapes' first rounds, carried.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s25/c4.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
timeout -s INT -k 20 240 python -m experiments.cli run .kc/s25/public-8.yaml --out $R/campaign --no-live \
    > $R/campaign-run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "done \(" $R/campaign/campaign.log | cut -c1-200
rm -f $R/campaign/campaign.db-shm
timeout $(( 585 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --suite public --per-shape \
    --kernels $R/campaign docs/results/h200-public-7/campaign-A docs/results/h200-public-7/campaign-B \
              docs/results/h200-public-5/campaign-A docs/results/h200-public-5/campaign-B \
              docs/results/h200-public-4/campaign-A docs/results/h200-public-4/campaign-B \
              docs/results/h200-public-3/campaign-A docs/results/h200-public-3/campaign-B \
    --out $R/benchPub > $R/benchPub.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchPub/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
