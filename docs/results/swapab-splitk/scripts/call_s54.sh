#!/bin/bash
# Session 54. On an H200: call_s53.sh in 400 s (the public bench under the two-sided pairing, the swapped split-K
# tests and bench, the A/A checks), then ../../splitk-two-ctas/scripts/bench_s54.sh in what is left. On any other GPU:
# bench_s54.sh with TESTS=1 (the gpu tests of sm90_swapab_splitk added after session 53's review, every build
# carried, then the two-CTAs split-K bench), then ../../splitk-ncu/scripts/ncu_s53.sh with CACHE=none (the
# 512x512x16384 kernels with caches left warm: the reduction's share of the call as in the bench's back-to-back
# graphs). Carry .kc/whl, .kc/s48/pcache.txz, .kc/s49/rev2.txz, .kc/s50/skinny.txz, .kc/s53/scache.txz,
# .kc/s53/ncache.txz, .kc/s54/tcache.txz.
set -u
T0=$(date +%s)
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  LIMIT_S=400 bash docs/results/swapab-splitk/scripts/call_s53.sh
  LIMIT_S=$(( 580 - ($(date +%s) - T0) )) bash docs/results/splitk-two-ctas/scripts/bench_s54.sh
else
  TESTS=1 LIMIT_S=330 bash docs/results/splitk-two-ctas/scripts/bench_s54.sh
  CACHE=none timeout $(( 580 - ($(date +%s) - T0) )) bash docs/results/splitk-ncu/scripts/ncu_s53.sh
fi
echo "done at $(( $(date +%s) - T0 )) s"
