#!/bin/bash
# device call H (nvidia-h200-x2): GPU 1: pytest -m gpu for the new sm90_cpasync family, then a bench
# of the cp.async kernels and clustered sm90_lean tiles against the previous best kernels (small
# shapes, rows that are not whole 128-byte lines), then half B of the public campaign. GPU 0: half A
# of the public campaign (h200-public-families.yaml, the suite's shapes alternately split in two).
# Both halves are resumed in the next call.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl3/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
tar xzf .kc/cache-v7.tgz -C /tmp/kc --strip-components=1 2>/dev/null || echo "no prebuilt cache"
touch /tmp/kc/.marker
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit --format=csv,noheader
python3 - <<'P'
import yaml
suite = yaml.safe_load(open("experiments/suites/public.yaml"))["shapes"]
shapes = ["x".join(map(str, s)) for group in suite.values() for s in group]
text = open("experiments/campaigns/h200-public-families.yaml").read()
for i, half in enumerate("AB"):
    mine = shapes[i::2]
    out = text.replace("suite: ../suites/public.yaml", "shapes: [" + ", ".join(mine) + "]")
    out = out.replace("name: h200-public-families", f"name: h200-public-families-{half}")
    out = out.replace("wall_seconds: 1500", "wall_seconds: 750")
    open(f"experiments/campaigns/h200-public-families-{half}.yaml", "w").write(out)
    print(half, len(mine), mine)
P
camp () {  # half gpu cores seconds
  CUDA_VISIBLE_DEVICES=$2 taskset -c $3 timeout -s INT -k 20 $4 python -m experiments.cli run \
    experiments/campaigns/h200-public-families-$1.yaml --out $R/camp$1 --no-live > $R/camp$1-run.log 2>&1
  echo "campaign $1 rc=$?"; tail -n 2 $R/camp$1/campaign.log | cut -c1-200
}
camp A 0 0-15 $(( 560 - ($(date +%s) - T0) )) &
(
export CUDA_VISIBLE_DEVICES=1
taskset -c 16-31 timeout 150 python -m pytest -m gpu -q -rfE -p no:cacheprovider -k "cpasync" tests/test_gpu_families.py tests/test_gpu_abi_host_path.py -s > $R/pytest-gpu-cpasync.log 2>&1; echo "pytest rc=$?"
tail -n 3 $R/pytest-gpu-cpasync.log | cut -c1-250
taskset -c 16-31 timeout 170 python -m experiments.cli bench --modes device --timing '{"repeats":5}' \
  --shapes 1000x1000x1000 1024x1024x1000 1008x1008x1008 1024x1024x1024 2000x2000x2000 3000x3000x3000 256x4096x256 96x3072x768 4096x1024x1024 2048x2048x2048 128x4096x4096 1536x6002x2500 \
  --kernels .kc/callH-kernels.json --out $R/cpasync > $R/cpasync.log 2>&1; echo "bench rc=$?"
grep -E "^- (vs best|A/A)" $R/cpasync/*.md | head -3
camp B 1 16-31 $(( 560 - ($(date +%s) - T0) ))
) &
wait
rm -f $R/camp*/campaign.db-shm
cd /tmp/kc && find . -newer .marker -type f \( -name kernel.so -o -name meta.json -o -name kernel.cu \) | tar czf $OUT/kc-new.tgz -T - 2>/dev/null; ls -la $OUT/kc-new.tgz
cd $OUT && tar czf res.tgz res && rm -rf res
