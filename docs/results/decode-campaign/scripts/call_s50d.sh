#!/bin/bash
# Session 50, on any GPU: `evogemm run` of ../campaign.yaml (the public campaign's settings and families on four
# decode shapes outside both suites, 300 s of wall), each shape's hall of fame re-verified against the six vendor
# baselines at its end. Its first-round kernels were built on the CPU machine (`evogemm prebuild`, carried as
# .kc/s50/decode.txz); mutants build on the device's cores. Everything comes back in one archive.
set -u
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc && tar xJf .kc/s50/decode.txz -C /tmp/kc || exit 8
timeout -s INT -k 15 ${RUN_S:-360} python -m experiments.cli run docs/results/decode-campaign/${CAMPAIGN:-campaign}.yaml --out $R/campaign \
  --no-live > $R/run.log 2>&1
echo "run rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 30 $R/run.log | cut -c1-200
rm -f $R/campaign/campaign.db-shm
cd $OUT && tar czf res.tgz res && rm -rf res
