#!/bin/bash
# device call 6 (nvidia-h200), session 26: at four tiny-M x N, long-K shapes outside both suites, the first
# round a campaign with h200-unseen-4's settings would time (skinny_mma, sm90_splitk, sm80_cutlass, sm90_cutlass
# seeds, knob-fitted) and the grouped (+ pdl for ping-pong) twins of its sm90_splitk genomes, one bench --per-shape
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s28/tlk.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s28/HEAD
timeout 420 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 32x64x16384 64x128x8192 96x96x12288 128x128x32768 --kernels .kc/s28/tlk --out $R/benchTlk > $R/benchTlk.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchTlk/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
