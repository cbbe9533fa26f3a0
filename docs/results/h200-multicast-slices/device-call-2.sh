#!/bin/bash
# session 36, device call 2: (a) pytest -m gpu -k multicast (space revision 4's multicast slices and 8-CTA clusters
# through the gate at 4 shapes); (b) evogemm bench of the new tiles / clusters against the halls' best small-shape
# kernels at 14 shapes, every kernel at every shape.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s36/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
timeout 200 python -m pytest -m gpu -q -s tests/test_gpu_families.py -k multicast > $R/pytest-gpu-multicast.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu-multicast.log
timeout 330 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s36/cache \
  --shapes 1000x1000x1000 1024x1024x1024 768x768x768 1280x1280x1280 1000x1000x2000 1008x1008x1008 896x896x896 \
           1152x1152x1152 1536x1536x1536 1000x2000x1000 96x3072x768 256x4096x256 128x4096x4096 2048x1024x1024 \
  --kernels .kc/s36/tiny2 --out $R/tiny2 > $R/tiny2.log 2>&1
echo "tiny2 rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/tiny2.log
