#!/bin/bash
# session 35, device call A: the skinny GPU tests (every skinny_mma seed at its domain's shapes, the interleaved K
# splits at ragged K), then a bench of the decode seeds (old and new, cluster_k 1/2/4) at eight decode shapes.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
R=$OUT/res; mkdir -p $R
EVOGEMM_CACHE=$PWD/.kc/s35/tcache timeout 250 python -m pytest -m gpu -q -s -p no:cacheprovider -rs tests/test_gpu_families.py -k "skinny_mma or interleaved" > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "passed|failed|Error" $R/pytest-gpu.log | tail -n 12
