#!/bin/bash
# device call 1 (nvidia-h200-x2): A/B of population.screen on ten shapes outside both suites:
# A = the public campaign's settings (fresh-shipped.yaml, GPU 0, cores 0-15),
# B = the same plus screen: 24 and 24 more evaluations (fresh-screen24.yaml, GPU 1, cores 16-31)
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
tar xzf .kc/s19big/cache-s19.tgz -C /tmp/kc --strip-components=1; ls /tmp/kc | wc -l; touch /tmp/kc/.marker
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv,noheader
git log --oneline | head -1
camp () {  # arm gpu cores seconds yaml
  CUDA_VISIBLE_DEVICES=$2 taskset -c $3 timeout -s INT -k 20 $4 python -m experiments.cli run \
    .kc/s19/$5 --out $R/camp$1 --no-live > $R/camp$1-run.log 2>&1
  echo "campaign $1 rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/camp$1/campaign.log | cut -c1-200
}
camp A 0 0-15 $(( 555 - ($(date +%s) - T0) )) fresh-shipped.yaml &
camp B 1 16-31 $(( 555 - ($(date +%s) - T0) )) fresh-screen24.yaml &
wait
rm -f $R/camp*/campaign.db-shm
cd /tmp/kc && find . -newer .marker -type f \( -name kernel.so -o -name meta.json \) | tar czf /tmp/kc-new.tgz -T - 2>/dev/null
ls -la /tmp/kc-new.tgz; cd $OUT && split -b 15M -d /tmp/kc-new.tgz kc-new.tgz.part && ls -la
tar czf res.tgz res && rm -rf res
