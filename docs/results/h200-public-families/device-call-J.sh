#!/bin/bash
# device call J (warm x2): GPU 1 resumes half B of the public campaign; GPU 0 benches half A's
# halls of fame (--per-shape) at once, then half B's once its campaign stops
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
ls /tmp/kc | wc -l
[ -d /tmp/kc/00 ] || [ "$(ls /tmp/kc | wc -l)" -gt 50 ] || tar xzf .kc/cache-v8.tgz -C /tmp/kc --strip-components=1
cp -r .kc/campI/campB /tmp/campB
(CUDA_VISIBLE_DEVICES=1 taskset -c 16-31 timeout -s INT -k 15 230 python -m experiments.cli resume /tmp/campB --no-live > $R/campB-resume.log 2>&1; echo "resume B rc=$?"; tail -n 2 /tmp/campB/campaign.log | cut -c1-200) &
CUDA_VISIBLE_DEVICES=0 taskset -c 0-15 timeout 200 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
  --shapes 64x64x4096 256x4096x256 1024x1024x1024 2048x2048x2048 4096x1024x1024 1024x4096x12288 4096x8192x4096 16384x4096x16384 16x6144x4096 128x28672x4096 1024x6144x4096 4096x4096x14336 512x8192x28672 1000x1000x1000 \
  --per-shape --kernels .kc/campI/campA --out $R/benchA > $R/benchA.log 2>&1; echo "bench A rc=$?"
grep -E "^- (vs best|A/A)" $R/benchA/*.md | head -2
wait
LEFT=$(( 470 - ($(date +%s) - T0) )); echo "bench B gets $LEFT s"
CUDA_VISIBLE_DEVICES=0 taskset -c 0-31 timeout $LEFT python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
  --shapes 128x128x128 512x512x16384 128x4096x4096 256x12288x4096 8192x64x8192 8192x8192x1024 8192x8192x8192 12288x12288x12288 16x4096x14336 128x4096x14336 2048x28672x4096 8192x10240x8192 4000x4096x4096 96x3072x768 \
  --per-shape --kernels /tmp/campB --out $R/benchB > $R/benchB.log 2>&1; echo "bench B rc=$?"
grep -E "^- (vs best|A/A)" $R/benchB/*.md | head -2
rm -f /tmp/campB/campaign.db-shm; cp -r /tmp/campB $R/campB
cd $OUT && tar czf res.tgz res && rm -rf res
