#!/bin/bash
# device call 1 (nvidia-h200), session 34: gemm_pdl A/B. The record kernels of 16 public shapes and their
# gemm_pdl twins, one bench --per-shape (interleaved with the six vendor baselines); then the same twins after
# a foreign kernel (a cuBLAS GEMM, an elementwise op) in a graph (neighbour.py).
# (It ran with the kernel folder at .kc/pdl-ab, the copy of kernels/ carried to the device.)
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/pdl-cache
mkdir -p .kc/pdl-cache && tar xJf .kc/halls-cache-public.tar.xz -C .kc/pdl-cache --strip-components=1 && tar xJf .kc/s34/pdl-new.tar.xz -C .kc/pdl-cache --strip-components=1 || exit 8
R=$OUT/res; mkdir -p $R
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
echo "untar at $(( $(date +%s) - T0 )) s"
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
  --shapes 64x64x4096 128x128x128 256x4096x256 1024x1024x1024 128x4096x4096 2048x2048x2048 256x12288x4096 \
           4096x1024x1024 8192x64x8192 16x6144x4096 16x4096x14336 128x28672x4096 128x4096x14336 1024x6144x4096 \
           1000x1000x1000 96x3072x768 \
  --kernels docs/results/h200-gemm-pdl/kernels --out $R/benchPdl > $R/benchPdl.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep "^\[" $R/benchPdl.log | tail -n 20
timeout 150 python .kc/s34/neighbour.py docs/results/h200-gemm-pdl/kernels .kc/pdl-cache $R/neighbour \
  1000x1000x1000,128x128x128,256x4096x256,16x6144x4096,1024x1024x1024,4096x1024x1024 > $R/neighbour.log 2>&1
echo "neighbour rc=$? at $(( $(date +%s) - T0 )) s"; cat $R/neighbour.log | tail -n 20
cd $OUT && tar czf res.tgz res && rm -rf res
