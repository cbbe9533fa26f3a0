#!/bin/bash
# device call L (nvidia-h200, one GPU): bench --per-shape over the halls of fame of call K's two
# campaign halves, interleaved with the six vendor baselines; then the cp.async GPU tests
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
tar xzf .kc/cache-K-halls.tgz -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv,noheader
bench () {  # half seconds shapes...
  local h=$1 s=$2; shift 2
  timeout $s python -m experiments.cli bench --modes device --timing '{"repeats":5}' --shapes "$@" \
    --per-shape --kernels .kc/K/res/camp$h --out $R/bench$h > $R/bench$h.log 2>&1
  echo "bench $h rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|geomean)" $R/bench$h/*.md | head -4
}
bench A 200 64x64x4096 256x4096x256 1024x1024x1024 2048x2048x2048 4096x1024x1024 1024x4096x12288 4096x8192x4096 16384x4096x16384 16x6144x4096 128x28672x4096 1024x6144x4096 4096x4096x14336 512x8192x28672 1000x1000x1000
bench B 300 128x128x128 512x512x16384 128x4096x4096 256x12288x4096 8192x64x8192 8192x8192x1024 8192x8192x8192 12288x12288x12288 16x4096x14336 128x4096x14336 2048x28672x4096 8192x10240x8192 4000x4096x4096 96x3072x768
LEFT=$(( 580 - ($(date +%s) - T0) )); echo "pytest gets $LEFT s"
timeout $LEFT python -m pytest -m gpu -k cpasync tests/test_gpu_families.py tests/test_gpu_abi_host_path.py -q -p no:cacheprovider > $R/pytest-gpu-cpasync.log 2>&1
echo "pytest rc=$?"; tail -n 3 $R/pytest-gpu-cpasync.log
cd $OUT && tar czf res.tgz res && rm -rf res
