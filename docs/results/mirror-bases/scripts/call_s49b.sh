#!/bin/bash
# session 49, the base sweep as it ran (inline, on the H200 still held after the public benches): the 170 sweep
# genomes and 20 reference kernels built on the device's 16 cores (184 builds, about 6.5 minutes), then `evogemm bench`
# of lists/ (each shape's mirrors from every base, with and without the vendor's cluster, and its two recorded best
# kernels) at ../h100-vendor-algos/suite-mirrors.yaml, interleaved with the six vendor baselines. Carry .kc/whl.
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/gpu.txt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/sweep .kc/s49/sweep
timeout 560 python -m experiments.cli bench --modes device --cache $PWD/.kc/s49/sweep --timing '{"repeats":5}' \
  --per-shape --suite docs/results/h100-vendor-algos/suite-mirrors.yaml --kernels docs/results/mirror-bases/lists \
  --out $OUT/sweep > $OUT/sweep/bench.log 2>&1
echo "rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^\[|geomean|built|build" $OUT/sweep/bench.log | cut -c1-140 | tail -20
