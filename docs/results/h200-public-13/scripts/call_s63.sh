#!/bin/bash
# Session 63, one device call, two branches. On an H200: call_s62c.sh's H200 branch (the record's public bench
# again, with ../kernels/decode-neighbours added), with ../kernels/consistent added too (select_consistent.py: per
# shape, kernels earlier H200 benches timed consistently close to the record's ratio that the record's bench did not
# time there). On any other GPU: the whole `pytest -m gpu` on this commit, as
# ../../skinny-y-resident/scripts/call_s58.sh runs it, but verbose and with each output line stamped with the second
# it was written, so that a run cut off by the call's limit still says what each test took (pytest's own --durations
# prints only at the end). Carry .kc/whl and .kc/s64.txz (CACHE: another; .kc/s62c.txz, the two builds
# ../kernels/consistent adds and the gpu tests' recorded vendor mirrors, ../../gpu-suite-time); LIMIT_S as call_s58.sh
# (give it 560).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
K=docs/results/h200-public-13/kernels
grep -q H200 $OUT/gpu.txt && SKIP_TESTS=1 CACHE=${CACHE:-.kc/s64.txz} EXTRA_KERNELS="$K/decode-neighbours $K/consistent" \
  exec bash docs/results/stream-cluster-k/scripts/call_s61c.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf ${CACHE:-.kc/s64.txz} -C $C || exit 8
LEFT=$(( ${LIMIT_S:-480} - ($(date +%s) - T0) - 10 ))
EVOGEMM_CACHE=$C timeout $LEFT python3 -m pytest -v -p no:cacheprovider -m gpu -rfEs --durations=40 tests/ 2>&1 \
  | while IFS= read -r l; do printf '%s %s\n' "$(( $(date +%s) - T0 ))" "$l"; done > $OUT/pytest-gpu-all.log
RC=${PIPESTATUS[0]}
echo "pytest -m gpu rc=$RC at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu-all.log)"
