#!/bin/bash
# session 45, last call (178 s of device budget left): the gpu test files the family call's time-boxed run did not reach
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/s45/cache ] || tar xJf .kc/s45/cache.txz -C .kc/s45 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s45/cache
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 110 python -m pytest -v -m gpu -rs tests/test_gpu_dependent_launch.py tests/test_gpu_splitk_inkernel.py \
  tests/test_gpu_export.py > $OUT/pytest-gpu-tail.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "PASSED|FAILED|ERROR|passed|failed" $OUT/pytest-gpu-tail.log | tail -20
