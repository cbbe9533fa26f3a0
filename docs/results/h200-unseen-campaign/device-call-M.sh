#!/bin/bash
# device call M (nvidia-h200, one GPU): the h200-unseen.yaml campaign (ten shapes outside both
# suites, the public campaign's settings), then bench --per-shape over its halls of fame
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
tar xzf .kc/cache-U.tgz -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv,noheader
SH="32x8192x8192 4x12288x4096 64x14336x4096 1x4096x11008 48x11008x4096 256x5120x5120 2048x5120x5120 3072x768x3072 6000x6000x6000 777x1555x2049"
timeout -s INT -k 20 $1 python -m experiments.cli run experiments/campaigns/h200-unseen.yaml --out $R/campU --no-live > $R/campU-run.log 2>&1
echo "campaign U rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/campU/campaign.log | cut -c1-200
rm -f $R/campU/campaign.db-shm
LEFT=$(( 585 - ($(date +%s) - T0) )); echo "bench gets $LEFT s"
timeout $LEFT python -m experiments.cli bench --modes device --timing '{"repeats":5}' --shapes $SH \
    --per-shape --kernels $R/campU --out $R/benchU > $R/benchU.log 2>&1
echo "bench U rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|geomean)" $R/benchU/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
