#!/bin/bash
# Session 58, one device call, two branches. On an H200: call_s57.sh without its gpu tests (the public bench with the
# record's command plus ../kernels, then the decode probe). On any other GPU: the whole `pytest -m gpu` on this
# commit, every kernel it builds carried prebuilt (tests/gpu_prebuild.py's 217 genomes, built on the CPU machine), its
# log as $OUT/pytest-gpu-all.log. Carry .kc/whl and .kc/s58cache.txz (the kernels of .kc/s55/cache.txz and
# .kc/s57cache.txz, which the H200 branch benches, and the gpu tests' kernels); LIMIT_S (default 480): the call's
# limit, the tests cut to what is left of it (the H200 branch takes 80 s less: its results come back in one tar
# written at the end). CACHE: another kernel cache to carry and use instead (session 60's call_s61.sh).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
if grep -q H200 $OUT/gpu.txt; then
  CACHES=${CACHE:-.kc/s58cache.txz} LIMIT_S=$(( ${LIMIT_S:-480} - 80 )) SKIP_TESTS=1 exec bash docs/results/skinny-y-resident/scripts/call_s57.sh
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf ${CACHE:-.kc/s58cache.txz} -C $C || exit 8
LEFT=$(( ${LIMIT_S:-480} - ($(date +%s) - T0) - 10 ))
EVOGEMM_CACHE=$C timeout $LEFT python3 -m pytest -q -p no:cacheprovider -m gpu -rfEs tests/ > $OUT/pytest-gpu-all.log 2>&1
echo "pytest -m gpu rc=$? at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu-all.log)"
