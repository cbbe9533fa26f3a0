#!/bin/bash
# device call 7 (nvidia-h200), session 34: after the capture tidy (capture_calls, graph_edges), the same GPU tests again:
# full: tests/test_gpu_dependent_launch.py (5) and tests/test_gpu_export.py (its package bench included).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
tar xJf .kc/gpu-cache-s34b.tar.xz -C .kc || exit 7
R=$OUT/res; mkdir -p $R
EVOGEMM_CACHE=$PWD/.kc/gpu-cache timeout 200 python -m pytest -m gpu -q -s -p no:cacheprovider -rs tests/test_gpu_dependent_launch.py tests/test_gpu_export.py > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "made full|passed|failed|Error" $R/pytest-gpu.log | tail -n 12
cd $OUT && tar czf res.tgz res && rm -rf res
