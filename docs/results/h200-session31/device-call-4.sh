#!/bin/bash
# device call 4 (nvidia-h200), session 31: Nsight Compute on the prototype's mainloop (512x512x16384) and the vendor.
set -u
which ncu || ls /usr/local/cuda/bin | grep -i nsight
cd .kc/proto
timeout 300 ncu --launch-skip 1 --launch-count 1 -k regex:clusterk --section SpeedOfLight --section WarpStateStats \
   --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum \
   python ncu_one.py 512x512x16384 4,1 2>&1 | grep -vE "^==PROF==|^\s*$" | tail -60
timeout 200 ncu --launch-skip 1 --launch-count 1 -k regex:nvjet --section SpeedOfLight \
   --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active \
   python ncu_one.py 512x512x16384 2>&1 | grep -vE "^==PROF==|^\s*$" | tail -30
