#!/bin/bash
# Session 53: on an H200, ../../swapab-splitk/scripts/call_s53.sh (the public bench, the swapped split-K bench, the
# A/A check); on any other GPU, ncu_s53.sh (Nsight Compute at 512x512x16384, which the card's HBM matters little to:
# its operands are 33.5 MB and its kernels move 134-200 MB through L2). Carry .kc/whl, .kc/s48/pcache.txz,
# .kc/s49/rev2.txz, .kc/s50/skinny.txz, .kc/s53/scache.txz, .kc/s53/ncache.txz.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && exec bash docs/results/swapab-splitk/scripts/call_s53.sh
exec bash docs/results/splitk-ncu/scripts/ncu_s53.sh
