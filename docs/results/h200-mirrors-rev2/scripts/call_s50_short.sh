#!/bin/bash
# Session 50, for a short H200 call (LIMIT_S seconds in all, default 330): the skinny neighbourhood first
# (../../skinny-swapab/scripts/call_s50a.sh, at most 150 s), then the public bench with revision-2 mirrors
# (call_s50b.sh) in what is left. On any other GPU it stops at once. Outputs in one archive.
T0=$(date +%s); LIMIT_S=${LIMIT_S:-330}
OUT0=$OUT
mkdir -p $OUT0/rev2 $OUT0/skinny
OUT=$OUT0/skinny BENCH_S=150 bash docs/results/skinny-swapab/scripts/call_s50a.sh
grep -q H200 $OUT0/skinny/gpu.txt || exit 0
LEFT=$(( LIMIT_S - ($(date +%s) - T0) - 25 ))
[ $LEFT -gt 60 ] && OUT=$OUT0/rev2 PUB_S=$LEFT bash docs/results/h200-mirrors-rev2/scripts/call_s50b.sh
cd $OUT0 && tar czf results.tgz --exclude=gpu0-worker.log rev2 skinny && rm -rf rev2 skinny && ls -la
