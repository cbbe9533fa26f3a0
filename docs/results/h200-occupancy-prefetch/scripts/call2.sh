#!/bin/bash
# session 37, device call 2: the mainloop with L2 prefetch ahead of the TMA loads (patched genomes) against their
# bases, (a) evogemm bench at 20 shapes, (b) warm against cold inputs in back-to-back graph replay (warmcold.py),
# (c) Nsight Compute of the 1000^3 pair with cold inputs is left out; SASS check of the prefetch instruction.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
python3 - > $R/libs.txt <<'PY'
import glob
from pathlib import Path
from genome.genome import Genome
from evaluator.compile import Compiler
c = Compiler.default(Path(".kc/s37/cache"), jobs=1)
for f in sorted(glob.glob(".kc/s37/pfbench/*.json")):
    r = c.build_many([Genome.load(f)])[0]
    print(Path(f).stem, r.library, ";".join(str(k) for k in r.knobs), r.cached)
PY
cat $R/libs.txt
L() { awk -v n="$1" '$1 ~ n {print $2 "@" $3; exit}' $R/libs.txt; }
cuobjdump --dump-sass $(L ^pf8-ref-ws_64x160 | cut -d@ -f1) | grep -oE "UTMAPF[^;]*|UTMALDG[^;]*|UBLKPF[^;]*" | sort | uniq -c > $R/sass-pf8.txt 2>&1; cat $R/sass-pf8.txt
timeout 240 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s37/cache \
  --shapes 1000x1000x1000 1024x1024x1024 768x768x768 896x896x896 1008x1008x1008 1280x1280x1280 1000x1000x2000 \
           1000x2000x1000 2048x1024x1024 2048x2048x2048 4096x1024x1024 1536x1536x1536 128x4096x4096 256x4096x256 \
           96x3072x768 1200x1440x4096 640x1280x2560 4096x4096x4096 8192x8192x1024 1024x6144x4096 \
  --kernels .kc/s37/pfbench --out $R/pf > $R/pf.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep "^\[" $R/pf.log; tail -n 3 $R/pf.log
timeout 200 python3 .kc/s37/scripts/warmcold.py $R/warmcold.json \
  "1000x1000x1000:vendor=torch,base=$(L ^ref-ws_64x160),pf8=$(L ^pf8-ref-ws_64x160),pf16=$(L ^pf16-ref-ws_64x160)" \
  "1024x1024x1024:vendor=torch,base=$(L ^ref-1024x1024),pf8=$(L ^pf8-ref-1024)" \
  "2048x2048x2048:vendor=torch,pp=$(L ^pp_128x128),pp_pf8=$(L ^pf8-pp_128),coop=$(L ^coop_128x256),coop_pf8=$(L ^pf8-coop)" \
  "4096x1024x1024:vendor=torch,pp=$(L ^pp_128x128),pp_pf8=$(L ^pf8-pp_128)" > $R/warmcold.log 2>&1
echo "warmcold rc=$? at $(( $(date +%s) - T0 )) s"; cat $R/warmcold.log | tail -8
