#!/bin/bash
# device call A2 (issue 11): h200-multi-gpu.yaml (public suite) on Ray with one GPU and 16 cores
# (cores 0-15, 100 GB for builds) while `pytest -m gpu` runs on the other GPU and cores 16-31; then
# with two GPUs and 32 cores (200 GB). Each campaign from an empty kernel cache.
set -u
ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kr/whl/*.whl || exit 9
tar xzf .kr/ray-trim.tgz -C /tmp/site || exit 8
export PYTHONPATH=/tmp/site:$ROOT PYTHONUNBUFFERED=1 RAY_USAGE_STATS_ENABLED=0 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/res; mkdir -p $R
RAY="python -m ray.scripts.scripts"
run_one () {  # name gpus cpus seconds visible cores memory
  CUDA_VISIBLE_DEVICES=$5 taskset -c $6 $RAY start --head --num-cpus=$3 --num-gpus=$2 --memory=$7 --include-dashboard=false --disable-usage-stats > $R/ray-$1.log 2>&1 || echo "ray start $1 failed"
  date +%s.%N > $R/$1.t0
  CUDA_VISIBLE_DEVICES=$5 RAY_ADDRESS=auto EVOGEMM_CACHE=/tmp/kc-$1 taskset -c $6 timeout -s INT -k 30 $4 python -m experiments.cli run experiments/campaigns/h200-multi-gpu.yaml --out /tmp/runs/$1 --no-live > $R/$1.log 2>&1; echo "$1 rc=$?"
  date +%s.%N > $R/$1.t1
  $RAY stop --force > /dev/null 2>&1
  tail -n 2 $R/$1.log | cut -c1-300
  python -m experiments.cli status /tmp/runs/$1 --json > $R/$1-status.json 2>&1
  cp /tmp/runs/$1/campaign.log $R/$1-campaign.log 2>/dev/null
  cp /tmp/runs/$1/campaign.db $R/$1-campaign.db 2>/dev/null
}
(CUDA_VISIBLE_DEVICES=1 EVOGEMM_CACHE=/tmp/kc-tests taskset -c 16-31 timeout 300 python -m pytest -m gpu -q -rfE -p no:cacheprovider --durations=5 tests/ > $R/pytest-gpu.log 2>&1; echo "pytest rc=$?" >> $R/pytest-gpu.log) &
run_one one 1 16 270 0 0-15 100000000000
wait
tail -n 12 $R/pytest-gpu.log | cut -c1-300
run_one two 2 32 160 0,1 0-31 200000000000
python - <<'P'
import json, os
R = os.environ["OUT"] + "/res"
for n in ("one", "two"):
    try:
        d = json.load(open(f"{R}/{n}-status.json"))
        t = float(open(f"{R}/{n}.t1").read()) - float(open(f"{R}/{n}.t0").read())
        done = sum(1 for s in d.get("shapes", []) if s.get("status") == "done")
        print(n, f"wall {t:.0f} s", "shapes done", done, "utilisation", json.dumps(d.get("utilisation")))
    except Exception as e:
        print(n, "no status", e)
P
cd $OUT && tar czf res.tgz res && rm -rf res
