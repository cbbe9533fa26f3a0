#!/bin/bash
# device call 1 (nvidia-h200, one GPU), session 22: the sm90_swapab family (sm90_cutlass on the transposed
# problem C^T = W A^T, as cuBLAS runs a row-major call) against the public halls' best kernels at the
# shapes where the halls lose or tie, and at four shapes no campaign has run; every kernel at every shape,
# interleaved with the six vendor baselines. Then the GPU tests of the new family.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s22/call1.txz | tar xf - -C /tmp/kc; ls /tmp/kc/*/ | wc -l
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu,utilization.gpu --format=csv,noheader
D=docs/results/h200-swapab
timeout 130 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 1000x1000x1000 1024x1024x1024 256x4096x256 1280x1280x1280 \
    --kernels $D/kernels/swapab $D/kernels/ref --out $R/benchSmall > $R/benchSmall.log 2>&1
echo "bench small rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchSmall/*.md | head -5
mkdir -p /tmp/big; cp $D/kernels/ref/*.json /tmp/big/; for f in $D/kernels/swapab/*.json; do case $f in *-ws-*) ;; *) cp $f /tmp/big/;; esac; done
timeout $(( 520 - ($(date +%s) - T0) )) python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 2048x2048x2048 4096x1024x1024 128x28672x4096 256x12288x4096 4096x8192x4096 8192x64x8192 \
             128x4096x14336 512x8192x28672 1024x4096x12288 8192x8192x1024 3072x3072x3072 1536x1536x6144 \
             3072x1024x2048 640x14336x2048 5120x1280x5120 768x2048x8192 10240x2560x2560 \
    --kernels /tmp/big --out $R/benchBig > $R/benchBig.log 2>&1
echo "bench big rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchBig/*.md | head -5
timeout $(( 580 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider -k swapab \
    tests/test_gpu_families.py tests/test_gpu_abi_host_path.py > $R/pytest-gpu-swapab.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu-swapab.log
cd $OUT && tar czf res.tgz res && rm -rf res
