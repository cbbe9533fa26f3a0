#!/bin/bash
# device call 6 (nvidia-h200, one GPU), session 22: campaign.yaml here (four shapes, 60 s of wall, the
# first round's seeds prebuilt and carried, the mutants built on the device), to see the engine's
# build-round rule act on the real GPU evaluator
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
mkdir -p /tmp/kc $OUT/res; xz -dc .kc/s22/call6.txz | tar xf - -C /tmp/kc
timeout -s INT -k 15 110 python -m experiments.cli run docs/results/h200-build-rounds/campaign.yaml --out $OUT/res/camp \
    --no-live > $OUT/res/run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"
rm -f $OUT/res/camp/campaign.db-shm; grep -E "done \(|waits on nvcc|left out" $OUT/res/camp/campaign.log | cut -c1-220
