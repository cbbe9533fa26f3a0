#!/bin/bash
# device call D (nvidia-h200-x2), session 20: A/B of the tile-N fix on ten shapes never measured before.
# Arm A: the tree before the fix (commit c78a31d, carried as .kc/s20/oldtree.tgz), GPU 0, cores 0-15.
# Arm B: this tree (WGMMA extended shapes defined for tile N outside the base widths, tile N 80/112/144/176/240
# in the space, three hand-picked seeds with such N), GPU 1, cores 16-31. Same campaign file
# (h200-unseen.yaml's settings with these shapes, 300 s of wall each), same seed_from. Then one bench
# --per-shape of both arms' halls on GPU 0, the other GPU idle.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; Y=/tmp/arms; mkdir -p $R /tmp/kc /tmp/old $Y
xz -dc .kc/s20/union2.txz | tar xf - -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l; touch /tmp/kc/.marker
tar xzf .kc/s20/oldtree.tgz -C /tmp/old
PYTHONPATH=/tmp/site:$PWD python3 .kc/s20/mkarms.py $PWD $Y gpu
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
echo "setup done at $(( $(date +%s) - T0 )) s"
LEFT=$(( 345 - ($(date +%s) - T0) ))
( cd /tmp/old && PYTHONPATH=/tmp/site:/tmp/old CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 timeout -s INT -k 20 $LEFT \
    python -m experiments.cli run $Y/fresh10-A.yaml --out $R/campA --no-live > $R/campA-run.log 2>&1; echo "arm A rc=$? at $(( $(date +%s) - T0 )) s" ) &
( PYTHONPATH=/tmp/site:$PWD CUDA_VISIBLE_DEVICES=1 taskset -c 16-31 timeout -s INT -k 20 $LEFT \
    python -m experiments.cli run $Y/fresh10-B.yaml --out $R/campB --no-live > $R/campB-run.log 2>&1; echo "arm B rc=$? at $(( $(date +%s) - T0 )) s" ) &
wait
rm -f $R/camp*/campaign.db-shm; tail -n 3 $R/campA/campaign.log $R/campB/campaign.log | cut -c1-200
PYTHONPATH=/tmp/site:$PWD CUDA_VISIBLE_DEVICES=0 timeout $(( 585 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device \
    --timing '{"repeats":5}' --shapes 1792x1792x4096 2560x4096x3072 6144x1536x2048 960x7168x4096 384x11008x4096 \
    4608x4608x2304 1280x10240x1280 3584x2048x7168 704x4096x8192 2304x2304x9216 --per-shape \
    --kernels $R/campA $R/campB --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/bench/*.md | head -3
cd /tmp/kc && find . -newer .marker -type f \( -name kernel.so -o -name meta.json \) > /tmp/new.txt; wc -l < /tmp/new.txt
tar cf - -T /tmp/new.txt | xz -6 -T16 > $OUT/kc-new.txz
cd $OUT && tar czf res.tgz res && rm -rf res && ls -la
echo "done at $(( $(date +%s) - T0 )) s"
