#!/bin/bash
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
[ "$(ls /tmp/kc | wc -l)" -gt 20 ] || tar xzf .kc/cache-U.tgz -C /tmp/kc --strip-components=1
cp -r .kc/M/res/campU /tmp/campU
timeout -s INT -k 15 150 python -m experiments.cli resume /tmp/campU --no-live > $R/campU-resume.log 2>&1
echo "resume rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 /tmp/campU/campaign.log | cut -c1-200
timeout 120 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --shapes 777x1555x2049 \
    --per-shape --kernels /tmp/campU --out $R/benchU2 > $R/benchU2.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A)" $R/benchU2/*.md | head -3
rm -f /tmp/campU/campaign.db-shm; cp -r /tmp/campU $R/campU
cd $OUT && tar czf res.tgz res && rm -rf res
