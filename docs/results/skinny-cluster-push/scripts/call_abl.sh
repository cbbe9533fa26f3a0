#!/bin/bash
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/abc; mkdir -p $C && tar xJf .kc/s60/abcache.txz -C $C || exit 8
timeout 200 python3 .kc/s60/ablate.py $C $OUT/ablate.json 2>&1 | tee $OUT/ablate.log | tail -20
