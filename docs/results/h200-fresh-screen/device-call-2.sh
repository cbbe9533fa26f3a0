#!/bin/bash
# device call 2 (nvidia-h200, one GPU): one bench --per-shape over the halls of fame of both arms of
# call 1 (each shape: the union of the two halls, interleaved with the six vendor baselines, so the
# arms are compared within one run); then the vendor's kernels by name; then tests/test_gpu.py
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
tar xzf .kc/s19/cache-halls1.tgz -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv,noheader
SH="8x5120x13824 2x8192x28672 24x3584x18944 192x5120x5120 768x2048x8192 1536x1536x6144 3072x3072x3072 5120x1280x5120 10240x2560x2560 640x14336x2048"
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --shapes $SH \
    --per-shape --kernels .kc/s19/c1/res/campA .kc/s19/c1/res/campB --out $R/benchAB > $R/benchAB.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchAB/*.md | head -3
timeout 90 python .kc/s19/vendor_kernels.py $R/vendor-kernels.json 1000x1000x1000 128x28672x4096 256x12288x4096 \
    512x512x16384 4096x1024x1024 2048x2048x2048 16x4096x14336 $SH > $R/vendor-kernels.log 2>&1
echo "vendor kernels rc=$? at $(( $(date +%s) - T0 )) s"
LEFT=$(( 585 - ($(date +%s) - T0) )); echo "pytest gets $LEFT s"
timeout $LEFT python -m pytest -m gpu tests/test_gpu.py -q -p no:cacheprovider > $R/pytest-gpu.log 2>&1
echo "pytest rc=$?"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
