#!/bin/bash
# device call 2 (nvidia-h200, one GPU), session 28: (1) the guided campaign of call 1 left its last shape
# (2304x768x3072) at 0 evaluations when its 440 s of wall ran out: extend its wall by 150 s and resume it;
# (2) one bench --per-shape at that shape of both campaigns' halls, interleaved with the six vendor baselines;
# (3) pytest -m gpu on this tree. Builds: first rounds and the GPU tests' kernels carried; mutants built here.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
for f in .kc/s30/u6.txz .kc/s30/gpu.txz; do xz -dc $f | tar xf - -C /tmp/kc; done; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s30/HEAD
cp -r .kc/s30/u6res/campaign-guided $R/campaign-guided
python -m experiments.cli extend $R/campaign-guided --wall-seconds 150 > $R/extend.log 2>&1; cat $R/extend.log | tail -3
timeout -s INT -k 20 200 python -m experiments.cli resume $R/campaign-guided --no-live > $R/resume-run.log 2>&1
echo "resume rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/campaign-guided/campaign.log | cut -c1-220
rm -f $R/campaign-guided/campaign.db-shm
timeout 120 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape --shapes 2304x768x3072 \
    --kernels .kc/s30/u6res/campaign-random $R/campaign-guided --out $R/bench9 > $R/bench9.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/bench9/*.md | head -4
timeout $(( 590 - ($(date +%s) - T0) )) python -m pytest -m gpu -q tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
