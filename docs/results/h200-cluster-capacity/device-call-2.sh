#!/bin/bash
# device call 2 (nvidia-h200), session 27: every sm90_lean tile with a cluster of 2-8 CTAs whose grid at
# 1000^3 is 96-132 CTAs (tile K 64, stages auto and 8) at 1000^3; then the 12 fastest of them with the
# references at 1024x1024x1000, 1008^3, 1024^3 and 1536^3; then sm90_cutlass tiles with clusters of 4-8 at
# 5000x1000x3000 (6000-byte rows), and its 6 fastest at 3000^3 and 2048x8192x1000
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s29/kp.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
cat .kc/s29/HEAD
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape --shapes 1000x1000x1000 \
    --kernels .kc/s29/kp1 --out $R/benchKp1 > $R/benchKp1.log 2>&1
echo "bench1 rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchKp1/*.md | head -4
python - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/res/benchKp1/bench.json"))
ks = [k for k in d["shapes"][0]["kernels"] if k["measurement"]["status"] == "ok"]
ks.sort(key=lambda k: k["measurement"]["device"]["median_us"])
refs = {"8198793e", "7667f7ab", "972e407a"}
top = [k["genome"] for k in ks if k["genome"]["id"][:8] not in refs][:12] + [k["genome"] for k in ks if k["genome"]["id"][:8] in refs]
for k in ks[:15]: print(k["genome"]["id"][:8], round(k["measurement"]["device"]["median_us"], 2))
os.makedirs(".kc/s29/kp2/hall_of_fame", exist_ok=True)
for s in ("1024x1024x1000", "1008x1008x1008", "1024x1024x1024", "1536x1536x1536"):
    json.dump(top, open(f".kc/s29/kp2/hall_of_fame/{s}.json", "w"))
PY
timeout 240 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 1024x1024x1000 1008x1008x1008 1024x1024x1024 1536x1536x1536 --kernels .kc/s29/kp2 --out $R/benchKp2 > $R/benchKp2.log 2>&1
echo "bench2 rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchKp2/*.md | head -4
timeout 200 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape --shapes 5000x1000x3000 \
    --kernels .kc/s29/kp3 --out $R/benchKp3 > $R/benchKp3.log 2>&1
echo "bench3 rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchKp3/*.md | head -4
python - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/res/benchKp3/bench.json"))
refs = {g["family"] + json.dumps(g["params"], sort_keys=True) for g in json.load(open(".kc/s29/kp5k-refs.json"))}
ks = [k for k in d["shapes"][0]["kernels"] if k["measurement"]["status"] == "ok"]
ks.sort(key=lambda k: k["measurement"]["device"]["median_us"])
isref = lambda g: g["family"] + json.dumps(g["params"], sort_keys=True) in refs
top = [k["genome"] for k in ks if not isref(k["genome"])][:6] + [k["genome"] for k in ks if isref(k["genome"])]
for k in ks[:10]: print(k["genome"]["id"][:8], round(k["measurement"]["device"]["median_us"], 2))
os.makedirs(".kc/s29/kp4/hall_of_fame", exist_ok=True)
for s in ("3000x3000x3000", "2048x8192x1000"):
    json.dump(top, open(f".kc/s29/kp4/hall_of_fame/{s}.json", "w"))
PY
timeout 150 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes 3000x3000x3000 2048x8192x1000 --kernels .kc/s29/kp4 --out $R/benchKp4 > $R/benchKp4.log 2>&1
echo "bench4 rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchKp4/*.md | head -4
cd $OUT && tar czf res.tgz res && rm -rf res
