#!/bin/bash
# device call 5 (nvidia-h200, one GPU): tile N chosen for wave quantisation (144, 176; and 256x160,
# 128x192 c1x2), with the fresh-screen halls' best kernels at the same shapes, one bench run
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
tar xzf docs/results/h200-wave-tiles/kernels/cache-w.tgz -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l
timeout 170 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
    --shapes 1536x1536x6144 5120x1280x5120 10240x2560x2560 640x14336x2048 768x2048x8192 3072x3072x3072 \
    --kernels docs/results/h200-wave-tiles/kernels --out $R/benchW > $R/benchW.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchW/*.md | head -3
cd $OUT && tar czf res.tgz res && rm -rf res
