#!/bin/bash
# session 43, device call 3: the 9 gpu tests call 1 did not reach (it stopped at its 430 s limit inside
# test_skinny_any_k_passes_the_gate[5x3x33]: 282k rotation sets there), each group under its own limit and verbose, with
# the rotation sets capped and made in one batch (and test_gpu.py, the worker's tests); then the any-K bench.
# Carry .kc/whl and .kc/c43.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/c43/cache ] || tar xJf .kc/c43/cache.txz -C .kc/c43 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/c43/cache
R=/tmp/res3; mkdir -p $R; trap "tar czf $OUT/res3.tgz -C /tmp res3" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 150 python -m pytest -v -s -m gpu -rs --durations=0 tests/test_gpu_splitk_inkernel.py > $R/pytest-inkernel.log 2>&1
echo "inkernel rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/pytest-inkernel.log
timeout 60 python .kc/c43/probe_sets.py > $R/probe-sets.log 2>&1
echo "probe rc=$? at $(( $(date +%s) - T0 )) s"; cat $R/probe-sets.log | tail -3
timeout 160 python -m pytest -v -s -m gpu -rs --durations=0 tests/test_gpu_families.py -k "any_k and (5x3x33 or 8x14336x4099 or 7x100x1)" > $R/pytest-anyk.log 2>&1
echo "any_k rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/pytest-anyk.log
timeout 200 python -m pytest -v -s -m gpu -rs --durations=0 tests/test_gpu.py > $R/pytest-gpu-core.log 2>&1
echo "test_gpu rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/pytest-gpu-core.log
timeout $(( 540 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --cache $EVOGEMM_CACHE --timing '{"repeats":5}' --per-shape \
  --suite docs/results/h200-skinny-any-k/suite.yaml --kernels templates/skinny_mma/seeds templates/sm90_padded/seeds \
  --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- vs" $R/bench/bench.md | head -3
