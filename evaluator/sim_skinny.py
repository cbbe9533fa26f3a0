"""The simulator model of the `skinny_mma` family (streaming mma.sync kernel for skinny GEMMs).

  time = launch + first-load latency + warp / cluster reductions
       + soft_max(streamed DRAM bytes / achievable bandwidth, L2 bytes / L2 bandwidth, mma time) x tail

* achievable bandwidth (Little's law): bytes in flight (resident CTAs x threads x unroll x 32 B
  per m16 tile, twice that with register double buffering) over the DRAM latency, capped by the
  measured HBM bandwidth;
* L2 bytes: every warp re-reads the small operand for its K range (warps side by side along the
  rows read the same lines; they count once per CTA row block);
* mma time: 2 mma.sync m16n8k16 per 32-wide k chunk per (m16, n8) pair, at `MMA_SYNC_SHARE` of
  the wgmma peak;
* tail: CTAs beyond one resident wave run in a second one;
* stream efficiency: how the K splits walk the rows and the L2 prefetch size of X's loads
  (`STREAM_EFFICIENCY`, from docs/results/h200-skinny-stream/);
* any K (K % 8 != 0, space revision 7): the unroll, buffering and registers of the any-K kernel
  (`any_k_plan`, `any_k_registers`) and the extra aligned chunk a row's group reads (estimates), and from
  model revision 4 a factor on its body fitted to the any-K / aligned time ratios measured on an H100;
* CTA generations (model revision 2): a CTA is a chain of load rounds (one a group of `unroll` chunks,
  two groups a round with register double buffering) and then its reductions; CTAs beyond the resident
  ones wait for a slot, so a grid of g generations takes at least g such chains. One round costs the
  unloaded latency in a single generation and `LOADED_ROUND_US` when CTAs queue; a CTA's end (reductions,
  cluster barriers, exit and the next CTA's start) `CTA_END_FACTOR` times the nominal reduction costs.

A model, not a measurement: it ranks configurations for the simulator backend and the tests.
Against 576 H200 measurements of 96 configurations on 6 skinny shapes
(docs/results/h200-families/skinny-variants.json; `python -m evaluator.sim_fit check`): Spearman
0.80 pooled, 0.64 within a shape (0.66 / 0.34 before the CTA generations), its best three picks 6%
off the measured best (geomean; 9% before); against the 336 runs of 42 decode kernels at 8 shapes of
docs/results/h200-skinny-stream/bench: 0.83 pooled, 0.53 within a shape (0.67 / 0.06 before), best
three picks 9% off (13% before).
"""

from __future__ import annotations

from typing import Any, Mapping

from genome import Problem
from genome import skinny_mma_space as _sk

from .sim_device import DeviceSpec, SimBreakdown, SimParams, cdiv
from .sim_sm90 import soft_max

MMA_SYNC_SHARE = 0.6          # mma.sync throughput relative to wgmma on sm_90
DRAM_LATENCY_US = 0.8         # loaded latency of a streamed 16-byte load
MAX_THREADS_PER_SM = 2048
WARP_REDUCE_US = 0.25         # partial tiles through shared memory
CLUSTER_REDUCE_US = 0.45      # cluster barrier + reads of the peers' shared memory
# (k_interleave, l2_prefetch) -> the share of the achievable bandwidth X streams at. Measured on the H200
# (session 35, three configurations built both ways at eight decode shapes, and pure-load walks): interleaved
# splits with 128-byte prefetches 1-2% faster than contiguous ones with 256 bytes, interleaved with 256
# bytes 2-3% slower, 16-row tiles walked in contiguous ranges with 128 bytes ~7% slower.
STREAM_EFFICIENCY = {(0, 256): 1.0, (1, 128): 1.015, (1, 256): 0.975, (0, 128): 0.93}
# CTA generations (model revision 2), fitted on both sets of measurements above (session 35)
LOADED_ROUND_US = 1.5         # a round of loads while CTAs queue for slots
CTA_END_FACTOR = 3.0          # a CTA's end against WARP_REDUCE_US + CLUSTER_REDUCE_US
# any K (model revision 4): the any-K kernel's body against the model's estimate, which leaves out the shifts,
# shuffles and masks of every chunk. Fitted (session 43) to the median of 44 pairs of one genome at an odd K and
# the aligned K next to it, timed in one bench on an H100 (docs/results/h200-skinny-any-k/h100-s43): the any-K
# kernel took 1.94x the aligned one (1.13-3.06x), the model said 1.49x. A ratio on one GPU, not a time.
ANY_K_BODY_FACTOR = 1.33
# model revision 5: the same factor fitted on the H200, the card the model prices (session 44, after the any-K
# kernel's plain loads): the median of 60 such pairs timed in one bench there (docs/results/h200-skinny-any-k/h200-s44)
# was 2.27x (0.95-4.18x); revision 4 left the median pair 17% under its measured ratio (median log error 0.156;
# 1.55 leaves 0.009).
ANY_K_BODY_FACTOR_H200 = 1.55


def resident_ctas_per_sm(p: Mapping[str, Any], dev: DeviceSpec, registers: "int | None" = None) -> int:
    by_threads = MAX_THREADS_PER_SM // _sk.threads(p)
    by_regs = _sk.REGS_PER_SM // max(1, (registers or _sk.registers(p)) * _sk.threads(p))
    by_smem = dev.smem_per_block // max(1, _sk.smem_bytes(p)) if _sk.smem_bytes(p) else 32
    return max(1, min(by_threads, by_regs, by_smem, 32))


def generations_us(p: Mapping[str, Any], k: int, generations: int, reduction_us: float) -> float:
    """The least time `generations` waves of CTAs take one after another, each CTA a chain of load rounds and
    its end, less the first round's latency and the last reductions (the model's fixed and reduction terms)."""
    per_warp = cdiv(cdiv(k, 32), int(p["cluster_k"]) * p["warps_k"]) * 32
    groups = cdiv(per_warp, 32 * p["unroll"])
    rounds = cdiv(groups, 2) if p.get("prefetch", 0) else groups
    latency = DRAM_LATENCY_US if generations <= 1 else LOADED_ROUND_US
    chain = latency * rounds + CTA_END_FACTOR * reduction_us
    return generations * chain - DRAM_LATENCY_US - reduction_us


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    M, N, K = problem.m, problem.n, problem.k
    R, S = (M, N) if M > N else (N, M)
    p = params
    registers = None
    if K % 8:
        # any K: the second kernel, with its own unroll and buffering and its registers as estimated
        plan = _sk.any_k_plan_of(p)
        if plan is not None:
            p = {**p, "unroll": plan[0], "prefetch": plan[1]}
            registers = _sk.any_k_registers(p["warp_rows"], p["s_tile"], plan[0], 2 if plan[1] else 1)
    csplit = int(p["cluster_k"])
    rows_cta = p["warps_r"] * p["warp_rows"]
    row_blocks, s_blocks = cdiv(R, rows_cta), cdiv(S, p["s_tile"])
    ctas = row_blocks * s_blocks * csplit
    slots = resident_ctas_per_sm(p, dev, registers) * dev.n_sms
    resident = min(ctas, slots)
    waves = ctas / slots

    hbm = sp.hbm_efficiency * dev.hbm_tbps * 1e6        # bytes per microsecond
    x_bytes = 2.0 * R * K
    x_reads = 1 if s_blocks == 1 or x_bytes <= dev.l2_bytes * sp.l2_usable_fraction else s_blocks
    dram_bytes = x_bytes * x_reads + 2.0 * S * K + 2.0 * M * N
    l2_bytes = x_bytes * s_blocks + 2.0 * p["s_tile"] * s_blocks * K * row_blocks
    if K % 8:
        # any K: each row's group also reads the chunk after it (one lane of four), so L2 serves 1 / (4 x unroll)
        # more of both operands (the shifts' ALU work: ANY_K_BODY_FACTOR below)
        l2_bytes *= 1.0 + 1.0 / (4 * p["unroll"])
    # register double buffering (prefetch) keeps the next k chunk's loads in flight too
    inflight = resident * _sk.threads(p) * p["unroll"] * (p["warp_rows"] // 16) * 32.0 * (1 + int(p.get("prefetch", 0)))
    stream = STREAM_EFFICIENCY[(int(p.get("k_interleave", 0)), int(p.get("l2_prefetch", 256)))]
    bandwidth = min(hbm, inflight / DRAM_LATENCY_US) * stream
    t_dram = dram_bytes / bandwidth
    t_l2 = l2_bytes / (hbm * sp.l2_bw_ratio)
    flops = 2.0 * cdiv(R, 16) * 16 * s_blocks * p["s_tile"] * cdiv(K, 32) * 32
    mma_rate = dev.peak_tflops * 1e6 * MMA_SYNC_SHARE * min(1.0, resident / dev.n_sms)
    t_mma = flops / mma_rate
    body = soft_max((t_dram, t_l2, t_mma), sp.roofline_sharpness) * max(1.0, cdiv(ctas, slots) / max(waves, 1e-9))
    reduction = (WARP_REDUCE_US if p["warps_k"] > 1 else 0.0) + (CLUSTER_REDUCE_US if csplit > 1 else 0.0)
    if dev.model_revision >= 2:
        body = max(body, generations_us(p, K, cdiv(ctas, slots), reduction))
    if K % 8 and dev.model_revision >= 4:
        body *= ANY_K_BODY_FACTOR_H200 if dev.model_revision >= 5 else ANY_K_BODY_FACTOR
    fixed = sp.launch_us + DRAM_LATENCY_US + (sp.cluster_launch_us if csplit > 1 else 0.0)
    return SimBreakdown(total_us=fixed + body + reduction, fixed_us=fixed, compute_us=t_mma, l2_us=t_l2,
                        dram_us=t_dram, reduction_us=reduction, iteration_us=0.0, epilogue_us=0.0,
                        tiles=row_blocks * s_blocks, ctas=ctas, waves=waves, stages=p["unroll"],
                        mode="split_k" if csplit * p["warps_k"] > 1 else "data_parallel",
                        dram_bytes=dram_bytes, l2_bytes=l2_bytes)
