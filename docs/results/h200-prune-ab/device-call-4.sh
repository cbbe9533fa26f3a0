#!/bin/bash
# device call 4 (nvidia-h200, one GPU; no two-GPU host was lent), session 22: A/B of the family prune ratio
# with the refitted sm80_cutlass model, on six shapes of ../h200-swapab-ab. Arm A: family_prune_ratio 3.0
# (as committed before); arm B: 1.5; same tree and settings otherwise, 180 s of wall each, one after the
# other. Then one bench --per-shape of both arms' halls and of ../h200-swapab-ab's arm A (the same settings
# before the refit, 300 s), and the stream-K bench of ../h200-streamk.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; Y=/tmp/arms; D=docs/results/h200-prune-ab; S=docs/results/h200-streamk; mkdir -p $R /tmp/kc $Y
xz -dc .kc/s22/call4.txz | tar xf - -C /tmp/kc; ls /tmp/kc/*/ | wc -l
python3 $D/mkarms.py $PWD $Y gpu
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
echo "setup done at $(( $(date +%s) - T0 )) s"
for arm in A B; do
  timeout -s INT -k 15 200 python -m experiments.cli run $Y/prune-$arm.yaml --out $R/camp$arm --no-live > $R/camp$arm-run.log 2>&1
  echo "arm $arm rc=$? at $(( $(date +%s) - T0 )) s"
done
rm -f $R/camp*/campaign.db-shm; tail -n 2 $R/campA/campaign.log $R/campB/campaign.log | cut -c1-200
timeout $(( 510 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device \
    --timing '{"repeats":5}' --shapes 2560x2560x2560 5632x1024x4096 3328x3328x1024 1152x8192x2048 7168x1536x3072 \
    2816x640x5120 --per-shape --kernels $R/campA $R/campB docs/results/h200-swapab-ab/campaign-A --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/bench/*.md | head -4
timeout $(( 585 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device \
    --timing '{"repeats":5}' --shapes 2048x2048x2048 4096x1024x1024 256x12288x4096 128x28672x4096 8192x8192x1024 \
    4096x8192x4096 3328x3328x1024 2816x640x5120 5632x1024x4096 7168x1536x3072 3072x1024x2048 1280x1280x1280 \
    1024x4096x12288 512x8192x28672 --kernels $S/kernels/sk $S/kernels/ref --out $R/benchSK > $R/benchSK.log 2>&1
echo "stream-K bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|correctness)" $R/benchSK/*.md | head -3
cd $OUT && tar czf res.tgz res && rm -rf res && ls -la
echo "done at $(( $(date +%s) - T0 )) s"
