#!/bin/bash
# session 37, device call 1: (a) evogemm bench of sm90_lean tiles with 3-4 stages (two or more CTAs an SM) against
# the halls' best small-shape kernels at 14 shapes; (b) Nsight Compute on the 1000^3 and 2048^3 kernels and the vendor's.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
mkdir -p .kc/s37 && tar xJf .kc/s37/cache.txz -C .kc/s37 || exit 8
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=$PWD/.kc/s37/cache
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/res.tgz -C /tmp res" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
timeout 300 python -m experiments.cli bench --modes device --timing '{"repeats":5}' --cache .kc/s37/cache \
  --shapes 1000x1000x1000 1024x1024x1024 768x768x768 896x896x896 1152x1152x1152 1280x1280x1280 1000x1000x2000 \
           1000x2000x1000 96x3072x768 256x4096x256 128x4096x4096 2048x1024x1024 1536x1536x1536 640x1280x2560 \
           2048x2048x2048 4096x1024x1024 512x1024x1024 1008x1008x1008 128x128x128 1200x1440x4096 \
  --kernels .kc/s37/occ .kc/s37/occ2 --out $R/occ > $R/occ.log 2>&1
echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $R/occ.log
# Nsight Compute: one launch each (the second), clocks left alone
lib() { python3 - "$1" <<'PY'
import sys
from pathlib import Path
from genome.genome import Genome
from evaluator.compile import Compiler
c = Compiler.default(Path(".kc/s37/cache"), jobs=1)
r = c.build_many([Genome.load(sys.argv[1])])[0]
print(r.library, ",".join(str(k) for k in r.knobs))
PY
}
NCU="ncu --clock-control none --launch-skip 2 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,sm__warps_active.avg.per_cycle_active"
prof() {  # prof NAME SHAPE ARGS...
  timeout 100 $NCU -k "$KREGEX" python3 .kc/s37/scripts/ncu_one.py "$@" > $R/ncu-$NAME.txt 2>&1
  echo "ncu $NAME rc=$? at $(( $(date +%s) - T0 )) s"
}
for g in .kc/s37/occ/ref-ws_64x160x64_c4x1.json $(ls .kc/s37/occ/occ_64x96_c4x1_s4-*.json .kc/s37/occ/occ_64x64_c4x2_s4-*.json); do
  read L K < <(lib $g); NAME=1000-$(basename $g .json); KREGEX="regex:device_kernel"; prof 1000x1000x1000 $L $K
done
NAME=1000-vendor; KREGEX="regex:nvjet|gemm|Kernel"; prof 1000x1000x1000 torch
for g in .kc/s37/ncu/*.json; do
  read L K < <(lib $g); NAME=2048-$(basename $g .json); KREGEX="regex:device_kernel"; prof 2048x2048x2048 $L $K
done
NAME=2048-vendor; KREGEX="regex:nvjet|gemm|Kernel"; prof 2048x2048x2048 torch
echo "done at $(( $(date +%s) - T0 )) s"
