#!/bin/bash
# device call 2 (nvidia-h200-x2), session 22: A/B of the sm90_swapab family on ten shapes never measured.
# Arm A: the public campaign's six families; arm B: the same and sm90_swapab. Same tree, same campaign
# settings (h200-unseen.yaml's: screen 24, 38 evaluations a shape, the same seed_from), 300 s of wall each,
# arm A on GPU 0 and cores 0-15, arm B on GPU 1 and cores 16-31. Then one bench --per-shape of both arms'
# halls on GPU 0 (interleaved with the six vendor baselines) while GPU 1 runs the swapab GPU tests.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; Y=/tmp/arms; D=docs/results/h200-swapab-ab; mkdir -p $R /tmp/kc $Y
xz -dc .kc/s22/call2.txz | tar xf - -C /tmp/kc; ls /tmp/kc/*/ | wc -l; touch /tmp/kc/.marker
python3 $D/mkarms.py $PWD $Y gpu
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
echo "setup done at $(( $(date +%s) - T0 )) s"
LEFT=$(( 350 - ($(date +%s) - T0) ))
for arm in A B; do
  if [ $arm = A ]; then GPU=0; CPUS=0-15; else GPU=1; CPUS=16-31; fi
  ( CUDA_VISIBLE_DEVICES=$GPU taskset -c $CPUS timeout -s INT -k 20 $LEFT \
      python -m experiments.cli run $Y/swapab-$arm.yaml --out $R/camp$arm --no-live > $R/camp$arm-run.log 2>&1
    echo "arm $arm rc=$? at $(( $(date +%s) - T0 )) s" ) &
done
wait
rm -f $R/camp*/campaign.db-shm; tail -n 3 $R/campA/campaign.log $R/campB/campaign.log | cut -c1-200
( CUDA_VISIBLE_DEVICES=1 taskset -c 16-31 timeout $(( 580 - ($(date +%s) - T0) )) python -m pytest -m gpu -q \
    -p no:cacheprovider -k swapab tests/test_gpu_families.py tests/test_gpu_abi_host_path.py > $R/pytest-gpu-swapab.log 2>&1
  echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/pytest-gpu-swapab.log ) &
CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 timeout $(( 580 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device \
    --timing '{"repeats":5}' --shapes 2560x2560x2560 1536x4608x1536 5632x1024x4096 384x5120x13824 3328x3328x1024 \
    1152x8192x2048 7168x1536x3072 896x896x8192 640x2816x5120 2816x640x5120 --per-shape \
    --kernels $R/campA $R/campB --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/bench/*.md | head -4
wait
cd /tmp/kc && find . -newer .marker -type f \( -name kernel.so -o -name meta.json \) > /tmp/new.txt; wc -l < /tmp/new.txt
tar cf - -T /tmp/new.txt | xz -6 -T16 > $OUT/kc-new.txz
cd $OUT && tar czf res.tgz res && rm -rf res && ls -la
echo "done at $(( $(date +%s) - T0 )) s"
