#!/bin/bash
# device call 3 (nvidia-h200-x2), session 28: both A/B campaigns of calls 1-2 (h200-unseen-6-random/-guided),
# complete at 38 evaluations a shape, each extended by 20 evaluations a shape and 400 s of wall and resumed,
# one per GPU at the same time (the mutation phase grows from 14 to 34 evaluations a shape); then one bench
# --per-shape of both campaigns' halls at the nine shapes, interleaved with the six vendor baselines, on GPU 0.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s30/u6.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s30/HEAD
for arm in random guided; do
  gpu=0; [ $arm = guided ] && gpu=1
  cp -r .kc/s30/u6res/campaign-$arm $R/campaign-$arm
  python -m experiments.cli extend $R/campaign-$arm --evaluations 20 --wall-seconds 400 > $R/extend-$arm.log 2>&1
  CUDA_VISIBLE_DEVICES=$gpu timeout -s INT -k 20 430 python -m experiments.cli resume $R/campaign-$arm --no-live \
      > $R/resume-$arm-run.log 2>&1 &
done
wait
echo "resumes done at $(( $(date +%s) - T0 )) s"
for arm in random guided; do grep -c "done" $R/campaign-$arm/campaign.log; tail -n 2 $R/campaign-$arm/campaign.log | cut -c1-220; rm -f $R/campaign-$arm/campaign.db-shm; done
SH="4096x3072x1024 6144x1536x3072 960x4096x4096 1408x5632x2048 8192x2816x1408 1152x6912x2304 896x2048x2048 640x640x9216 2304x768x3072"
CUDA_VISIBLE_DEVICES=0 timeout $(( 592 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device \
    --timing '{"repeats":5}' --per-shape --shapes $SH --kernels $R/campaign-random $R/campaign-guided \
    --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/bench/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
