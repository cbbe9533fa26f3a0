#!/bin/bash
# Session 53: Nsight Compute on the 512x512x16384 kernels (the public shape furthest from its target: 1.00x the vendor,
# issue 8 asks 1.15x): the record's sm90_splitk ping-pong 64x128 with 4 splits (b4323ae6, grouped reduction, pdl),
# the cooperative 128x128 with 8 splits (5c2f7e48) and the vendor's (torch.matmul), the GEMM and the reduction of the
# second of three calls each, clocks left alone (CACHE=none: caches left warm, as in the bench's back-to-back
# graphs, where the partial sums are still in L2; default all: flushed before each kernel). Any GPU.
# Carry .kc/whl, .kc/s48/pcache.txz, .kc/s53/ncache.txz.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
C=/tmp/nc; mkdir -p $C; [ -d /tmp/pcache ] || tar xJf .kc/s48/pcache.txz -C /tmp || exit 8
cp -r /tmp/pcache/. $C/ && tar xJf .kc/s53/ncache.txz -C $C || exit 8
R=/tmp/res; mkdir -p $R; trap "tar czf $OUT/ncu.tgz -C /tmp res" EXIT
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
lib() { python3 - "$1" <<'PY'
import sys
from pathlib import Path
from genome.genome import Genome
from evaluator.compile import Compiler
c = Compiler.default(Path("/tmp/nc"), jobs=1)
r = c.build_many([Genome.load(sys.argv[1])])[0]
print(r.library, ",".join(str(k) for k in r.knobs))
PY
}
NCU="ncu --clock-control none --cache-control ${CACHE:-all} --launch-skip 2 --launch-count 2 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,dram__bytes_read.sum,sm__warps_active.avg.per_cycle_active,lts__t_sectors_srcunit_tex_op_read.sum"
ONE=docs/results/h200-occupancy-prefetch/scripts/ncu_one.py
S=512x512x16384
for g in templates/sm90_splitk/seeds/pp_64x128x64_k4_grouped_pdl.json templates/sm90_splitk/seeds/coop_128x128x64_k8.json; do
  read L K < <(lib $g)
  timeout 120 $NCU -k "regex:device_kernel|reduce" python3 $ONE $S $L $K > $R/ncu-$S-$(basename $g .json).txt 2>&1
  echo "ncu $(basename $g) rc=$? at $(( $(date +%s) - T0 )) s"
done
timeout 120 $NCU -k "regex:nvjet|gemm|Kernel|splitK|reduce" python3 $ONE $S torch > $R/ncu-$S-vendor.txt 2>&1
echo "ncu vendor rc=$? at $(( $(date +%s) - T0 )) s"
grep -hE "Profiling|Duration|Elapsed Cycles|SM Frequency|L2 Cache Throughput|DRAM Throughput|Compute \(SM\)|lts__t_bytes|dram__bytes_read|gmma" $R/ncu-*.txt | cut -c1-150
