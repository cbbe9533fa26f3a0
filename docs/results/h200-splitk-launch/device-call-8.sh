#!/bin/bash
# device call 8 (nvidia-h200), session 26: the GPU tests that run the engine (short campaign, two shapes in flight) on the final tree (every GPU test; builds carried)
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s28/gpu6.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s28/HEAD; git status --short | grep -v '^?? .kc' | head -8
timeout $(( 200 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider --durations=5 tests/test_gpu.py -k "short_campaign or two_shapes" > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
