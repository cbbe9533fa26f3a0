#!/bin/bash
# Session 62, one device call, two branches. On an H200: call_s61c.sh with the kernels of .kc/s62b.txz
# (stream_wgmma's gpu tests, then the public bench with the record's command plus ../kernels/screen). On any other
# GPU: only the gpu tests of what changed since a GPU last ran them (stream_wgmma's seeds, four of them new, and its
# cluster gate test; skinny_mma's, whose launch now goes through evogemm_cluster_launch.j2; the planted dependent
# launch, rewritten for it; the host path), so that the rest of the session's device time can go to H200 asks.
# Carry .kc/whl and .kc/s62b.txz (.kc/s62cache.txz with skinny_mma and the stream_wgmma clusters rebuilt at
# commit 112a1d6: the record's public bench, ../kernels/screen and tests/gpu_prebuild.py, 350 genomes).
# LIMIT_S (default 480): the call's limit.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
grep -q H200 $OUT/gpu.txt && CACHE=.kc/s62b.txz exec bash docs/results/stream-cluster-k/scripts/call_s61c.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s62b.txz -C $C || exit 8
EVOGEMM_CACHE=$C timeout $(( ${LIMIT_S:-480} - 20 )) python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs \
  tests/test_gpu_families.py tests/test_gpu_dependent_launch.py tests/test_gpu_abi_host_path.py \
  -k "stream_wgmma or skinny_mma or dependent_launch or abi_host_path" > $OUT/pytest-gpu-stream-skinny.log 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu-stream-skinny.log)"
