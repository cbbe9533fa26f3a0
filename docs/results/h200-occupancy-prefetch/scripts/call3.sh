#!/bin/bash
# session 37, device call 3: (a) build the first-round genomes of the model-seed check (kernels/msA) on the device's
# 16 cores and bring the new cache entries back; (b) ncu of the 1000^3 and 1024^3 kernels and the vendor's with the
# caches left warm (--cache-control none).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
ls -d .kc/s37/cache/*/*/ | sort > /tmp/before.txt
NCU="ncu --clock-control none --cache-control none --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats"
lib() { awk -v n="$1" '$1 ~ n {print $2 " " $3; exit}' .kc/s37/libs.txt; }
python3 - > .kc/s37/libs.txt <<'PY'
from pathlib import Path
from genome.genome import Genome
from evaluator.compile import Compiler
c = Compiler.default(Path(".kc/s37/cache"), jobs=1)
for f in [".kc/s37/occ/ref-ws_64x160x64_c4x1.json", ".kc/s37/occ/ref-1024x1024x1024-7667f7ab.json"]:
    r = c.build_many([Genome.load(f)])[0]
    print(Path(f).stem, r.library, ",".join(str(k) for k in r.knobs))
PY
for s in 1000x1000x1000 1024x1024x1024; do
  if [ $s = 1000x1000x1000 ]; then read L K < <(lib ref-ws_64x160); else read L K < <(lib ref-1024); fi
  timeout 60 $NCU -k regex:device_kernel python3 .kc/s37/scripts/ncu_one.py $s $L $K > $R/ncu-warm-$s-ours.txt 2>&1
  timeout 60 $NCU -k "regex:nvjet|gemm|Kernel" python3 .kc/s37/scripts/ncu_one.py $s torch > $R/ncu-warm-$s-vendor.txt 2>&1
  echo "ncu $s at $(( $(date +%s) - T0 )) s"
done
grep -hE "^\s+(nvjet|void)|Duration|Elapsed Cycles|SM Frequency" $R/ncu-warm-*.txt | cut -c1-120
JOBS=16 timeout 420 python3 .kc/s37/scripts/build_list.py .kc/s37/cache .kc/s37/msA > $R/build-msA.log 2>&1
echo "build rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 2 $R/build-msA.log
ls -d .kc/s37/cache/*/*/ | sort > /tmp/after.txt
comm -13 /tmp/before.txt /tmp/after.txt > /tmp/new.txt; wc -l < /tmp/new.txt
tar cJf $R/cacheA.txz $(cat /tmp/new.txt) && ls -la $R/cacheA.txz
