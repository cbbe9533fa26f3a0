#!/bin/bash
# device call 1 (nvidia-h200-x2), session 23 (2026-11-30): the public campaign h200-public-families.yaml as
# committed, on the tree with the first-round build cut (69ed21c) and sm90_cutlass's implicit epilogue_tile
# parameter (ed8b657), started afresh; the suite's shapes split alternately into halves A (GPU 0, cores 0-15)
# and B (GPU 1, cores 16-31), 500 s of wall each. Builds: the first rounds' kernels, listed by
# `evogemm prebuild --list` on the simulator and built on the CPU machine (xz); mutants build here.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s23/c1/r0.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l; touch /tmp/kc/.marker
echo "extracted at $(( $(date +%s) - T0 )) s"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
python3 - <<'P'
import yaml
suite = yaml.safe_load(open("experiments/suites/public.yaml"))["shapes"]
shapes = ["x".join(map(str, s)) for group in suite.values() for s in group]
text = open("experiments/campaigns/h200-public-families.yaml").read()
for i, half in enumerate("AB"):
    mine = shapes[i::2]
    out = text.replace("suite: ../suites/public.yaml", "shapes: [" + ", ".join(mine) + "]")
    out = out.replace("name: h200-public-families", f"name: h200-public-families-{half}")
    out = out.replace("wall_seconds: 1500", "wall_seconds: 500")
    open(f"experiments/campaigns/h200-public-families-{half}.yaml", "w").write(out)
    print(half, len(mine), mine)
P
camp () {  # half gpu cores seconds
  CUDA_VISIBLE_DEVICES=$2 taskset -c $3 timeout -s INT -k 20 $4 python -m experiments.cli run \
    experiments/campaigns/h200-public-families-$1.yaml --out $R/camp$1 --no-live > $R/camp$1-run.log 2>&1
  echo "campaign $1 rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/camp$1/campaign.log | cut -c1-200
}
camp A 0 0-15 $(( 560 - ($(date +%s) - T0) )) &
camp B 1 16-31 $(( 560 - ($(date +%s) - T0) )) &
wait
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
rm -f $R/camp*/campaign.db-shm
cd /tmp/kc && find . -newer .marker -type f \( -name kernel.so -o -name meta.json \) > /tmp/new.txt; wc -l < /tmp/new.txt
tar cf - -T /tmp/new.txt | xz -6 -T16 > $OUT/kc-new.txz; ls -la $OUT/kc-new.txz
cd $OUT && tar czf res.tgz res && rm -rf res && ls -la
echo "done at $(( $(date +%s) - T0 )) s"
