#!/bin/bash
# Prepared in session 49, not yet run: both prepared H200 benches in one call (about 300 s). On an H200 only (on any
# other GPU it stops at once). 1. call_s50b.sh: the public bench with the revision-2 mirrors of the H200's picks;
# 2. ../../skinny-swapab/scripts/call_s50a.sh: the swapped 64x16 neighbourhood at eight skinny shapes. Each writes
# under its own folder of $OUT. Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/rev2.txz, .kc/s50/skinny.txz.
OUT0=$OUT
mkdir -p $OUT0/rev2 $OUT0/skinny
OUT=$OUT0/rev2 PUB_S=${PUB_S:-330} bash docs/results/h200-mirrors-rev2/scripts/call_s50b.sh
grep -q H200 $OUT0/rev2/gpu.txt || exit 0
OUT=$OUT0/skinny BENCH_S=${BENCH_S:-200} bash docs/results/skinny-swapab/scripts/call_s50a.sh
# the device returns at most eight files a call: everything in one archive
cd $OUT0 && tar czf results.tgz --exclude=gpu0-worker.log rev2 skinny && rm -rf rev2 skinny && ls -la
