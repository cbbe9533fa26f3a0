#!/bin/bash
# device call 2 (nvidia-h200), session 34: (1) the gemm_pdl A/B bench again, now with the worker's timing graphs
# turning programmatic edges into full ones (the gemm_pdl patch applied for this bench only, then reverted);
# (2) pytest -m gpu, every GPU test, on the commit without gemm_pdl (prebuilt kernels carried).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p .kc/pdl-cache && tar xJf .kc/halls-cache-public.tar.xz -C .kc/pdl-cache --strip-components=1 && tar xJf .kc/s34/pdl-new.tar.xz -C .kc/pdl-cache --strip-components=1 || exit 8
tar xJf .kc/gpu-cache-s34.tar.xz -C .kc || exit 7
R=$OUT/res; mkdir -p $R
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
patch -p1 < .kc/s34/gemm_pdl.patch > $R/patch.log || exit 6
EVOGEMM_CACHE=$PWD/.kc/pdl-cache timeout 200 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
  --shapes 64x64x4096 128x128x128 256x4096x256 1024x1024x1024 128x4096x4096 2048x2048x2048 256x12288x4096 \
           4096x1024x1024 8192x64x8192 16x6144x4096 16x4096x14336 128x28672x4096 128x4096x14336 1024x6144x4096 \
           1000x1000x1000 96x3072x768 \
  --kernels .kc/pdl-ab --out $R/benchFull > $R/benchFull.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep "^\[" $R/benchFull.log | tail -n 20
grep -c "programmatic edges" $R/benchFull/gpu0-worker.log; grep "programmatic edges" $R/benchFull/gpu0-worker.log | cut -c1-60 | sort | uniq -c | head -n 40
patch -R -p1 < .kc/s34/gemm_pdl.patch >> $R/patch.log || exit 5
git status --short 2>/dev/null | head -n 5
EVOGEMM_CACHE=$PWD/.kc/gpu-cache timeout 330 python -m pytest -m gpu -q -p no:cacheprovider -rs tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 6 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
