#!/bin/bash
# session 43, device call 4: the batched rotation sets with every operand on a 256-byte boundary (call 3's batch put
# them 330 bytes apart at 5x3x33, and the kernels refused to run there): the any-K gpu tests at all eight shapes, the
# batch test, and the any-K bench at 13x1000x1001 (its 75 sets are made in one batch) again. Carry .kc/whl and .kc/c43.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
[ -d .kc/c43/cache ] || tar xJf .kc/c43/cache.txz -C .kc/c43 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/c43/cache
R=/tmp/res4; mkdir -p $R; trap "tar czf $OUT/res4.tgz -C /tmp res4" EXIT
timeout 150 python -m pytest -v -s -m gpu -rs --durations=0 tests/test_gpu_families.py tests/test_gpu.py -k "any_k or rotation_sets" > $R/pytest.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/pytest.log
timeout 100 python -m experiments.cli bench --modes device --cache $EVOGEMM_CACHE --timing '{"repeats":5}' --shapes 13x1000x1001 \
  --kernels templates/skinny_mma/seeds templates/sm90_padded/seeds --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|^- vs" $R/bench.log $R/bench/bench.md | head -4
