#!/bin/bash
# session 36, device call 4: pytest -m gpu, every GPU test, on the session's final tree; the tests' 129 kernels built on
# the CPU machine (tests/gpu_prebuild.py) and carried as gpu.txz.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
mkdir -p /tmp/kc; xz -dc .kc/s36g/gpu.txz | tar xf - -C /tmp/kc; find /tmp/kc -name "*.so" | wc -l
timeout 520 python -m pytest -m gpu -q -rs > $OUT/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 5 $OUT/pytest-gpu.log
