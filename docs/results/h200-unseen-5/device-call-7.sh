#!/bin/bash
# device call 7 (nvidia-h200, one GPU), session 27, after the extend fix (ac58e79): the campaign of call 4 (h200-unseen-5: eight unseen shapes,
# seven K-pitch) continued in a new call: `evogemm extend` by 38 evaluations a shape and 270 s of wall, then
# `evogemm resume`, then one bench --per-shape of its halls at the eight shapes. Builds of call 4's first rounds and
# mutants made on the CPU machine and carried; new mutants built here.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s29/u5.txz | tar xf - -C /tmp/kc; xz -dc .kc/s29/u5mut.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s29/HEAD
cp -r .kc/s29/u5c $R/campaign
python -m experiments.cli extend $R/campaign --evaluations 38 --wall-seconds 270 > $R/extend.log 2>&1; echo "extend rc=$?"; cat $R/extend.log | tail -3
timeout -s INT -k 15 290 python -m experiments.cli resume $R/campaign --no-live > $R/resume.log 2>&1
echo "resume rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "done|resum" $R/campaign/campaign.log | tail -n 9 | cut -c1-200
rm -f $R/campaign/campaign.db-shm
timeout $(( 385 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 1200x1200x1200 2000x2000x2000 6000x2000x1000 1000x4000x3000 4000x4000x5000 512x2000x1800 3000x1000x6000 \
             2048x2048x8192 \
    --kernels $R/campaign --out $R/benchU5c > $R/benchU5c.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchU5c/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
