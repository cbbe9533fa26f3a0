#!/bin/bash
# session 41: the whole `pytest -m gpu` with the kernels tests/gpu_prebuild.py lists built on the CPU machine and
# carried (carry .kc/whl and .kc/s41: cache.txz unpacking to cache/).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/s41/cache ] || tar xJf .kc/s41/cache.txz -C .kc/s41 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s41/cache
R=/tmp/res-gpu; mkdir -p $R; trap "tar czf $OUT/res-gpu.tgz -C /tmp res-gpu" EXIT
python tests/gpu_prebuild.py --jobs 16 > $R/prebuild.log 2>&1
echo "prebuild rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/prebuild.log
timeout $(( 570 - ($(date +%s) - T0) )) python -m pytest -q -m gpu -rs tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 5 $R/pytest-gpu.log
