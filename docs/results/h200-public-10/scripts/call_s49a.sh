#!/bin/bash
# session 49, first call. On an H200: call_s48e.sh (the gpu baseline test, the public re-bench of the selection with
# both vendor-mirror sets, the mirrors' gpu test). On any other GPU: the whole `pytest -m gpu` on this tree, with the
# 196 kernels of tests/gpu_prebuild.py built on the CPU machine and carried (.kc/s49/gtest.txz).
# Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/gtest.txz.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then exec bash docs/results/h200-public-10/scripts/call_s48e.sh; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p .kc/s49/gcache && tar xJf .kc/s49/gtest.txz -C .kc/s49/gcache || exit 8
EVOGEMM_CACHE=$PWD/.kc/s49/gcache timeout 520 python -m pytest -q -m gpu -rs -p no:cacheprovider tests > $OUT/pytest-gpu-all.log 2>&1
echo "pytest -m gpu rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 15 $OUT/pytest-gpu-all.log | cut -c1-240
