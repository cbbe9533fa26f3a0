#!/bin/bash
# device call 4 (nvidia-h200, one GPU), session 28: pytest -m gpu on the session's last code commit
# (the GPU tests' kernels built on the CPU machine and carried).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s30/gpu.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l; cat .kc/s30/HEAD
timeout $(( 265 - ($(date +%s) - T0) )) python -m pytest -m gpu -q tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
