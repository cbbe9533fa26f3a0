#!/bin/bash
# session 42, prepared: skinny_mma's any K on the H200, one device call (~6 min). Carry .kc/whl (the wheels).
# 1. its gpu tests (the gate at eight odd-K shapes, and the skinny seeds' gate test at aligned ones), the kernels
#    built on the device's 16 cores; 2. a bench of the skinny seeds and sm90_padded's (the family that ran these
#    shapes before: the simulator's first choice there) against the six baselines at docs/results/h200-skinny-any-k/suite.yaml.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kcache
R=/tmp/res-anyk; mkdir -p $R; trap "tar czf $OUT/res-anyk.tgz -C /tmp res-anyk" EXIT
timeout 240 python -m pytest -q -m gpu -rs tests/test_gpu_families.py -k "any_k or skinny or interleave" > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
timeout $(( 560 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --cache $EVOGEMM_CACHE --timing '{"repeats":5}' --per-shape \
  --suite docs/results/h200-skinny-any-k/suite.yaml --kernels templates/skinny_mma/seeds templates/sm90_padded/seeds \
  --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 30 $R/bench/bench.md 2>/dev/null | grep -E "^- vs|geomean" | head
