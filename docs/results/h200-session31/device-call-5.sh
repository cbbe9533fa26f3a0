#!/bin/bash
# device call 1 (nvidia-h200), session 31: pytest -m gpu on the final commit (GPU-test kernels built on the CPU machine, carried).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/kc-gpu.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l; cat .kc/s31/HEAD
nvidia-smi --query-gpu=index,driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
timeout $(( 560 - ($(date +%s) - T0) )) python -m pytest -m gpu -q tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
