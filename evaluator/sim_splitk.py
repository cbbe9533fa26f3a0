"""The simulator model of the `sm90_splitk` family: the sm90_cutlass model of a problem with the
same tiles and per-tile work (M rounded up to the tile, x ksplit rows; K / ksplit deep), plus the
reduction launch (fp32 partial sums written, read back, fp16 C written; its chain of loads per thread
shorter with the grouped reduction, its launch cheaper with pdl), or with `fixup: inkernel` the
reduction in the GEMM's epilogue (no launch: the splits' wait for one another, and the bytes each epilogue
thread writes and reads back).

Each split reads its own K-slice of W, so the operands leave DRAM once in full (2MK + 2NK bytes),
where the stacked problem holds one slice of W that all its rows share (2NK / ksplit): the model is
evaluated with the HBM bandwidth scaled by the ratio of those byte counts (and the L2 bandwidth
kept), so its DRAM term is that of the real traffic. Without it, M = 16 with 16 splits came out at
11 us for 16x4096x14336 (W alone is 117 MB: 28 us at the measured copy bandwidth; measured 34 us)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_sm90 import model as sm90_model

# the reduction launch's thread walks the splits one load after another (reduce_splits): at a small M x N,
# where few threads run, that chain is its time. Fitted to the H200 at 64x64x4096 (128x128 tiles: 7.7 us
# at 16 splits, 11.2 us at 64); without it the model chose 32-64 splits there, 30-45% slower than 8-16
REDUCE_LOAD_US = 0.075
# pdl (the reduction a programmatic dependent launch of the GEMM): the median saving per schedule over 96
# pairs at ten split-K shapes on the H200, three benches: ping-pong 0.28 us (66 pairs, 59 faster), cooperative
# -0.26 us (30 pairs, 20 slower; down to -1.3 us with 128x128 tiles at 512x512) (docs/results/h200-splitk-launch)
PDL_SAVED_US = {"pingpong": 0.28, "cooperative": -0.26}


# fixup inkernel (the splits of a tile add their partial sums in the GEMM's epilogue): a fixed part (the count-in
# on the tile's word and the wait for the other splits, atomics and polls through L2) and a part per byte each
# epilogue thread moves (its share of the tile's fp32 partial sums written, then as many read back: 8 tm tn /
# threads bytes). Fitted to the H200 (docs/results/h200-splitk-inkernel, call 2: 28 in-kernel genomes against their
# serial twins at six split-K shapes, by least squares on the difference): the in-kernel epilogue cost 0.2-6.3 us
# more than the serial launch at 22 of the 28 pairs, most with 128x128 ping-pong tiles (128 threads move 1024 bytes
# each), and 0.2-1.0 us less at the other six (64 splits of one tile at 64x64x4096: the serial reduction's chain of
# 64 loads a thread). The fit (3.3 us + 0.005 us a byte) has an rms error of 1.5 us on the difference and gets its
# sign right at 25 of the 28
INKERNEL_WAIT_US = 3.3
INKERNEL_THREAD_BYTE_US = 0.005


def inkernel_reduce_us(params: Mapping[str, Any]) -> float:
    """The in-kernel reduction's time after the mainloop (no launch, no separate pass over C)."""
    tm, tn = int(params["tile_m"]), int(params["tile_n"])
    threads = 256 if params["schedule"] == "cooperative" else 128
    return INKERNEL_WAIT_US + INKERNEL_THREAD_BYTE_US * 8.0 * tm * tn / threads


def reduce_groups(m: int, n: int, splits: int, n_sms: int) -> int:
    """Threads to a quad of C in the grouped reduction: templates/sm90_splitk's reduce_groups."""
    quads, groups = m * n // 4, 1
    while groups < 32 and groups * 2 <= splits and quads * groups < n_sms * 64:
        groups *= 2
    return groups


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec,
          inner_model: "Callable[..., SimBreakdown]" = sm90_model) -> SimBreakdown:
    """`inner_model` prices the GEMM of one split (sm90_cutlass's model; a derived family passes its own)."""
    splits = int(params["ksplit"])
    tm = int(params["tile_m"])
    stacked = Problem(-(-problem.m // tm) * tm * splits, problem.n, max(8, problem.k // splits))
    inner = inner_model(params, stacked, sp, dev)
    # the other splits' slices of the kernel's B operand (W here; A in sm90_swapab_splitk, which passes the
    # transposed problem): the stacked problem holds one slice of it that all its rows share
    missing = 2.0 * problem.n * problem.k - 2.0 * stacked.n * stacked.k
    if inner.dram_bytes > 0 and missing > 0:
        scale = inner.dram_bytes / (inner.dram_bytes + missing)
        inner = inner_model(params, stacked, replace(sp, l2_bw_ratio=sp.l2_bw_ratio / scale),
                           replace(dev, hbm_tbps=dev.hbm_tbps * scale))
        inner = replace(inner, dram_bytes=inner.dram_bytes + missing)
    if params.get("fixup") == "inkernel":
        reduce_us = inkernel_reduce_us(params)
        return replace(inner, total_us=inner.total_us + reduce_us, reduction_us=inner.reduction_us + reduce_us,
                       mode="split_k")
    moved = (8.0 * splits + 2.0) * problem.m * problem.n
    groups = reduce_groups(problem.m, problem.n, splits, dev.n_sms) if params.get("reduce") == "grouped" else 1
    saved = PDL_SAVED_US.get(params["schedule"], 0.0) if int(params.get("pdl", 0)) else 0.0
    launch_us = max(0.0, sp.launch_us * 0.5 - saved)
    reduce_us = launch_us + moved / (sp.hbm_efficiency * dev.hbm_tbps * 1e6) + -(-splits // groups) * REDUCE_LOAD_US
    return replace(inner, total_us=inner.total_us + reduce_us, reduction_us=inner.reduction_us + reduce_us,
                   mode="split_k", dram_bytes=inner.dram_bytes + moved)
