#!/bin/bash
# Prepared in session 60 for the next call: ../../skinny-y-resident/scripts/call_s58.sh with session 60's kernel cache.
# On an H200: call_s57.sh without its gpu tests (the public bench with the record's command plus the decode probe's
# kernels, then the probe), now with skinny_mma's cluster reduction of commit b226b81. On any other GPU: the whole
# `pytest -m gpu` on this commit, every kernel from the cache. Carry .kc/whl and .kc/s60cache.txz: .kc/s58cache.txz
# plus the skinny_mma kernels of tests/gpu_prebuild.py (221 genomes) and of the record's set, built with b226b81's
# template. LIMIT_S (default 480): the call's limit (the H200 branch takes 60 s less for its closing tar).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  CACHES=.kc/s60cache.txz LIMIT_S=$(( ${LIMIT_S:-480} - 60 )) SKIP_TESTS=1 exec bash docs/results/skinny-y-resident/scripts/call_s57.sh
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf .kc/s60cache.txz -C $C || exit 8
LEFT=$(( ${LIMIT_S:-480} - ($(date +%s) - T0) - 10 ))
EVOGEMM_CACHE=$C timeout $LEFT python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/ > $OUT/pytest-gpu-all.log 2>&1
echo "pytest -m gpu rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu-all.log)"
