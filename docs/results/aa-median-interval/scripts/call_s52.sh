#!/bin/bash
# Session 52. On an H200: call_s51.sh (the public bench with the revision-2 mirrors under the two-sided pairing and
# 21 focused rounds, the skinny neighbourhood, the A/A check). On any other GPU, with GPU_SUITE=1: the whole
# `pytest -m gpu` on this tree (session 51 changed the worker's timing rounds and ran only test_gpu.py and
# test_gpu_dependent_launch.py), with the 182 kernels of tests/gpu_prebuild.py built on the CPU machine
# (.kc/s52/gtest.txz); without it, nothing. Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/rev2.txz, .kc/s50/skinny.txz,
# .kc/s52/gtest.txz (call_s51.sh's H200 path does not use the GPU-test kernels).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader > /tmp/gpu.txt; cat /tmp/gpu.txt
if grep -q H200 /tmp/gpu.txt; then exec bash docs/results/aa-median-interval/scripts/call_s51.sh; fi
[ "${GPU_SUITE:-0}" = 1 ] || { echo "not an H200: nothing (GPU_SUITE=0)"; exit 0; }
cp /tmp/gpu.txt $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/gcache && tar xJf .kc/s52/gtest.txz -C /tmp/gcache || exit 8
EVOGEMM_CACHE=/tmp/gcache timeout ${PYTEST_S:-540} python -m pytest -q -m gpu -rs -p no:cacheprovider tests > $OUT/pytest-gpu-all.log 2>&1
echo "pytest -m gpu rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 15 $OUT/pytest-gpu-all.log | cut -c1-240
