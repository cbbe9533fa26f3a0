#!/bin/bash
# session 41: the first round a campaign with h200-unseen-9-b's settings proposes at four K-pitch shapes (rows of A
# and W not whole 128-byte lines), timed in one bench, interleaved with the six vendor baselines; then the kernels
# cuBLAS runs there. Carry .kc/whl and .kc/s41kp (cache.txz, first/ = make_first_round.py's folder, vendor_kernels.py).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
tar xJf .kc/s41kp/cache.txz -C .kc/s41kp || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s41kp/cache
R=/tmp/res-kp; mkdir -p $R; trap "tar czf $OUT/res-kp.tgz -C /tmp res-kp" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
S=$(ls .kc/s41kp/first/hall_of_fame | sed 's/\.json$//' | tr '\n' ' ')
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache $EVOGEMM_CACHE --per-shape \
  --shapes $S --kernels .kc/s41kp/first --out $R/bench > $R/bench.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -iE "gate|wrong|fail|hang|error" $R/bench.log | head -5; tail -n 4 $R/bench.log
timeout 60 python3 .kc/s41kp/vendor_kernels.py $R/vendor-kernels.json $S > $R/vendor-kernels.log 2>&1
echo "vendor kernels rc=$? at $(( $(date +%s) - T0 )) s"; cut -c1-300 $R/vendor-kernels.log
