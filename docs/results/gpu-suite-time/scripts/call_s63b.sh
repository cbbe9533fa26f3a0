#!/bin/bash
# Session 63's second device call, on any GPU: the gpu tests the whole run of call 1 (../h100-s63/whole) spent most
# on, after their two fixes: test_gpu_abi_host_path.py (its kernels now come from the carried cache, not a private
# one) and the vendor-mirror gate tests (tests/gpu_prebuild.py now builds the mirrors of every pick recorded at their
# shapes). Verbose, each line stamped with the second it was written, and pytest's --durations. Carry .kc/whl and
# .kc/s63b.txz (../../h200-public-13/scripts/call_s63.sh's cache and the six mirrors added). LIMIT_S: the call's
# limit (default 240); CACHE: another kernel cache to carry and use instead (session 64: .kc/s64.txz, with the
# second version's mirrors).
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/kc; mkdir -p $C && tar xJf ${CACHE:-.kc/s63b.txz} -C $C || exit 8
LEFT=$(( ${LIMIT_S:-240} - ($(date +%s) - T0) - 10 ))
EVOGEMM_CACHE=$C timeout $LEFT python3 -m pytest -v -s -p no:cacheprovider -m gpu -rfEs --durations=15 \
  tests/test_gpu_abi_host_path.py "tests/test_gpu_families.py::test_the_mirrors_of_the_vendors_own_algorithm_pass_the_gate" 2>&1 \
  | while IFS= read -r l; do printf '%s %s\n' "$(( $(date +%s) - T0 ))" "$l"; done > $OUT/pytest-gpu.log
RC=${PIPESTATUS[0]}
echo "pytest rc=$RC at $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/pytest-gpu.log)"
grep -E "vendor|sm90_" $OUT/pytest-gpu.log | grep -v PASSED | cut -c1-220 | head -12
