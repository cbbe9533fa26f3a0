#!/bin/bash
# Session 64, the last device call of a session with 344 s of budget left: the two gpu test files whose time session
# 63 cut (tests/gpu_prebuild.py builds the vendor mirrors of every recorded baseline pick, and the ABI host-path
# tests' kernels come from the shared cache), timed with each output line stamped with its second. On any GPU.
# Carry .kc/whl and .kc/s64.txz. LIMIT_S: the call's limit (default 200).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf ${CACHE:-.kc/s64.txz} -C $C || exit 8
LEFT=$(( ${LIMIT_S:-200} - ($(date +%s) - T0) - 5 ))
EVOGEMM_CACHE=$C timeout $LEFT python3 -m pytest -v -p no:cacheprovider -m gpu -rA --durations=15 \
  tests/test_gpu_abi_host_path.py "tests/test_gpu_families.py::test_the_mirrors_of_the_vendors_own_algorithm_pass_the_gate" \
  2>&1 | while IFS= read -r l; do printf '%s %s\n' "$(( $(date +%s) - T0 ))" "$l"; done > $OUT/pytest-gpu-fixes.log
RC=${PIPESTATUS[0]}
echo "pytest rc=$RC at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu-fixes.log)"
grep -E "mirror|slowest| s (call|setup)" $OUT/pytest-gpu-fixes.log | tail -25
