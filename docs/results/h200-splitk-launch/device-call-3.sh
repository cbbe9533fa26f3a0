#!/bin/bash
# device call 3 (nvidia-h200), session 26: sm90_splitk's reduction launch variants (pdl: programmatic dependent
# launch of the reduction; reduce=grouped: up to 32 threads a quad) against the same builds without them, the
# halls' best split-K genomes at ten split-K shapes, one bench --per-shape (the grouped reduction with its
# final rule: up to 64 threads an SM; base and pdl a second time); then pytest -m gpu, every GPU test.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c4/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc
xz -dc .kc/s28/gpu.txz | tar xf - -C /tmp/kc; xz -dc .kc/s28/c3.txz | tar xf - -C /tmp/kc; ls /tmp/kc | wc -l
nvidia-smi --query-gpu=driver_version,clocks.max.sm,power.limit,temperature.gpu --format=csv,noheader
git log --oneline | head -1; git status --short | grep -v '^?? .kc' | head -8
true

timeout 150 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --per-shape \
    --shapes $(ls .kc/s28/pdl/hall_of_fame | sed 's/.json//' | tr '\n' ' ') \
    --kernels .kc/s28/pdl --out $R/benchPdl > $R/benchPdl.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "^- (vs best|A/A|correctness)" $R/benchPdl/*.md | head -4
timeout $(( 570 - ($(date +%s) - T0) )) python -m pytest -m gpu -q -p no:cacheprovider --durations=12 tests > $R/pytest-gpu.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 3 $R/pytest-gpu.log
cd $OUT && tar czf res.tgz res && rm -rf res
