#!/bin/bash
# The A/A check: `evogemm bench --per-shape` of each shape's recorded best (../../h200-public-10/selection) at the four
# public shapes over 1 ms (../suite.yaml), once a NAME, into OUT_DIR/NAME, while more than MIN_S seconds (default 45)
# are left before DEADLINE (epoch seconds); each bench at most 150 s. The caller has set PYTHONPATH (the wheels) and
# T0 (its start, for the log). usage: aa_check.sh DEADLINE CACHE OUT_DIR NAME...
set -u
DEADLINE=$1 C=$2 D=$3; shift 3
S=docs/results/aa-median-interval
for name in "$@"; do
  L=$(( DEADLINE - $(date +%s) )); [ $L -gt ${MIN_S:-45} ] || break
  mkdir -p $D/$name
  timeout $(( L < 150 ? L : 150 )) python -m experiments.cli bench --modes device --cache $C --timing '{"repeats":5}' \
    --per-shape --suite $S/suite.yaml --kernels docs/results/h200-public-10/selection --out $D/$name \
    > $D/$name/bench.log 2>&1
  echo "$name rc=$? at $(( $(date +%s) - ${T0:-0} )) s"; grep -E "A/A" $D/$name/bench.log | cut -c1-220
done
