#!/bin/bash
# device call B: gpu tests with the new host path; export the h200-families campaign twice (the
# host path before, 77077e2, and after) and bench both packages' call latency against torch.matmul
set -u
ROOT=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$ROOT PYTHONUNBUFFERED=1
R=$OUT/res; mkdir -p $R
nvidia-smi -L > $R/smi.txt 2>&1; cat $R/smi.txt
mkdir -p /tmp/old && tar xzf .kc/old-src.tgz -C /tmp/old
cp -r .kc/campaign/h200-families /tmp/camp
(cd /tmp/old && EVOGEMM_CACHE=/tmp/kc-old PYTHONPATH=/tmp/site:/tmp/old timeout 300 python -m experiments.cli export /tmp/camp --out /tmp/pkg-old > $R/export-old.log 2>&1; echo "export old rc=$?" >> $R/export-old.log) &
(EVOGEMM_CACHE=/tmp/kc-new timeout 300 python -m experiments.cli export /tmp/camp --out /tmp/pkg-new > $R/export-new.log 2>&1; echo "export new rc=$?" >> $R/export-new.log) &
EVOGEMM_CACHE=/tmp/kc-tests timeout 390 python -m pytest -m gpu -q -p no:cacheprovider tests/ > $R/pytest-gpu.log 2>&1; echo "pytest rc=$?"
tail -12 $R/pytest-gpu.log | cut -c1-400
wait
tail -2 $R/export-old.log $R/export-new.log
SH="96x200x72 256x4096x256 1024x1024x1024"
i=0
for p in new old new old; do
  i=$((i+1))
  if [ $p = old ]; then cd /tmp/old; PP=/tmp/site:/tmp/old; else cd $ROOT; PP=/tmp/site:$ROOT; fi
  PYTHONPATH=$PP timeout 60 python -m experiments.cli bench --kernels /tmp/pkg-$p --shapes $SH --out $R/bench-$p-$i > $R/bench-$p-$i.log 2>&1; echo "bench $p $i rc=$?"
  grep -E "^\|" $R/bench-$p-$i/*.md 2>/dev/null | tail -4
done
cd $OUT && tar czf res.tgz res && rm -rf res
