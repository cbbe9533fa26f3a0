#!/bin/bash
# device call 3 (nvidia-h200), session 34, on the tree whose timing graphs make only the edges between calls
# full: (1) cuBLAS back to back with its programmatic edges as captured and made full (vendor_pdl.py);
# (2) pytest -m gpu, every GPU test; (3) the public suite bench over the halls of the public campaigns.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p .kc/pdl-cache && tar xJf .kc/halls-cache-public.tar.xz -C .kc/pdl-cache --strip-components=1 || exit 8
tar xJf .kc/gpu-cache-s34b.tar.xz -C .kc || exit 7
R=$OUT/res; mkdir -p $R
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
timeout 60 python .kc/s34/vendor_pdl.py 64x64x4096,16x4096x14336,128x4096x14336,16x6144x4096,128x128x128,1000x1000x1000,2048x2048x2048,512x512x16384,128x28672x4096 $R/vendor_pdl.json > $R/vendor_pdl.log 2>&1
echo "vendor rc=$? at $(( $(date +%s) - T0 )) s"; cut -c1-200 $R/vendor_pdl.log
EVOGEMM_CACHE=$PWD/.kc/gpu-cache timeout 240 python -m pytest -m gpu -q -p no:cacheprovider -rs tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log; grep -E "FAIL|Error" $R/pytest-gpu.log | head -n 10
EVOGEMM_CACHE=$PWD/.kc/pdl-cache timeout 270 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --suite public --per-shape \
  --kernels .kc/halls/* --out $R/benchPub > $R/benchPub.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep "^\[" $R/benchPub.log | tail -n 30
cd $OUT && tar czf res.tgz res && rm -rf res
