#!/bin/bash
# device call 5 (nvidia-h200, one GPU), session 22: the GPU tests of sm90_swapab on the final tree (after its
# arguments block moved into sm90_cutlass's template, commit cfa03f9): its seeds built afresh on the device
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
mkdir -p /tmp/kc $OUT; xz -dc .kc/s22/call5.txz | tar xf - -C /tmp/kc
git log --oneline | head -1   # (the device's copy showed the session's first commit here; its files were the working tree at 987e542)
timeout 330 python -m pytest -m gpu -q -p no:cacheprovider -k swapab tests/test_gpu_families.py tests/test_gpu_abi_host_path.py > $OUT/pytest-gpu-swapab-final.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $OUT/pytest-gpu-swapab-final.log
