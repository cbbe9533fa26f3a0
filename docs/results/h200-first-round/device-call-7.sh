#!/bin/bash
# device call 7 (nvidia-h200, one GPU), session 23: pytest -m gpu on the final tree (the round cut and the
# build-time prior); every GPU test's kernels built before on the CPU machine (tests/gpu_prebuild.py), xz
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
mkdir -p /tmp/kc $OUT; xz -dc .kc/s23/c4/gpu.txz | tar xf - -C /tmp/kc
timeout $(( 280 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider --durations=8 tests > $OUT/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $OUT/pytest-gpu.log
