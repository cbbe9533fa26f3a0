"""The simulator model of the `stream_wgmma` family (TMA-fed weight-streaming wgmma kernel, min(M, N) <= 256).

  time = launch + first-load latency
       + max(streamed bytes / achievable bandwidth, (streamed x small-side tiles + small-operand bytes) / L2 bandwidth,
             wgmma time) x the work-unit imbalance
       + with ksplit > 1: the partial sums' bytes through L2 and the second kernel's launch
       + with cluster_k > 1: the cluster's launch and the push of the peers' sums into the storing CTA's shared memory

* achievable bandwidth: the measured HBM bandwidth times the run-length efficiency of `pieces` (runs of
  128 x pieces bytes of a row; the skinny_tma model's `RUN_EFFICIENCY`, from the TMA read probe), capped by
  Little's law: the ring's bytes in flight on the grid's CTAs over the loaded DRAM latency;
* the small operand: a tile_s-row box beside every stage, re-read from L2 by every row block; a small side
  above tile_s is ceil(small / tile_s) small-side tiles, each of which reads the streamed rows again (from L2:
  the tiles of a row block run side by side, so DRAM sees the streamed operand once);
* an SM's fill rate: both boxes of its CTAs' units through its TMA unit at skinny_tma's `SM_FILL_BYTES_PER_US`
  (binding where the work units are fewer than the SMs, and where the small operand's box is as large as the
  streamed one or larger);
* wgmma: m64 n{tile_s} k16 on the streamed rows padded to `rows` and the small side padded to tile_s, at
  `WGMMA_EFFICIENCY` of the datasheet tensor rate on the SMs the grid covers;
* imbalance: a CTA takes work units blockIdx.x, + grid, ... (small-side tiles x row blocks x ksplit of them); the
  grid is SMs x ctas_per_sm (at most the units), so the busiest CTA takes ceil(units / grid) where the average is
  units / grid;
* a cluster along K (cluster_k = c > 1): a unit is one c-th of a tile's K, one a CTA, every unit launched at once;
  the clusters that run together are those the GPC layout holds (evaluator.sim_sm90.usable_ctas), so more units
  than that run in waves; the push costs CLUSTER_PUSH_US plus the bytes a CTA receives over DSMEM_BYTES_PER_US;
* rows off 128-byte pitches (K % 64 != 0): the skinny_tma model's `K_PITCH_FACTOR` on the body;
* a ring of two stages: `SHALLOW_RING_FACTOR` on the body (the consumers hold one stage while its wgmma group is
  in flight, so one stage loads at a time; measured on the prototype, below).

A model, not a measurement: set by hand (session 46) from the skinny_tma model's terms, the fill-rate term added
after the family's first protocol bench, on an H100 (docs/results/h200-stream-wgmma/h100-s46/swbench: pooled rank
correlation with the 124 measured runs 0.87 without it, 0.92 with it; the model's pick at each of the 12 shapes
then 1.03x the measured best, geomean). On an H200 (session 62, docs/results/h200-public-13: 55 runs at six public
shapes, clusters of 2 and 4 and their workspace twins), its pick is the measured best at all six shapes; rank
correlation within a shape 0.87 (worst 0.75), pooled 0.97; not refitted.
"""

from __future__ import annotations

from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams, cdiv
from .sim_sm90 import usable_ctas
from .sim_skinny_tma import DRAM_LATENCY_US, K_PITCH_FACTOR, RUN_EFFICIENCY, SM_FILL_BYTES_PER_US, Y_L2_WEIGHT

WGMMA_EFFICIENCY = 0.7        # of the datasheet tensor rate, one consumer warpgroup per 64 rows, no ping-pong
SHALLOW_RING_FACTOR = 1.4     # a ring of two stages (one of them held by the wgmma in flight), on the body
SPLIT_LAUNCH_US = 2.0         # the second kernel that adds up the partial sums (its launch and its tail)
# the cluster's push (session 61, set by hand, not fitted): skinny_mma's measured st.async push of 64x64x4096's
# partial tiles cost 0.6 us over no reduction at all (docs/results/skinny-cluster-push); the bytes at a guessed
# ~80 bytes a cycle an SM into distributed shared memory
CLUSTER_PUSH_US = 0.6
DSMEM_BYTES_PER_US = 150e3


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    p = params
    M, N, K = problem.m, problem.n, problem.k
    R, S = (M, N) if M > N else (N, M)
    rows, tile_s, pieces, stages = int(p["rows"]), int(p["tile_s"]), int(p["pieces"]), int(p["stages"])
    ksplit, cluster = int(p["ksplit"]), int(p.get("cluster_k", 1))
    row_blocks, small_tiles = cdiv(R, rows), cdiv(S, tile_s)
    units = small_tiles * row_blocks * ksplit * cluster
    grid = min(units, usable_ctas(cluster, dev) if cluster > 1 else dev.n_sms * int(p["ctas_per_sm"]))
    chunks = cdiv(K, 64 * pieces)
    units_per_cta = cdiv(units, grid)
    imbalance = units_per_cta / (units / grid)

    hbm = sp.hbm_efficiency * dev.hbm_tbps * 1e6          # bytes per microsecond
    x_bytes = 2.0 * R * K
    y_bytes = 2.0 * tile_s * chunks * 64 * pieces * row_blocks * small_tiles   # a box beside each stage, from L2
    dram_bytes = x_bytes + 2.0 * S * K + 2.0 * M * N
    inflight = min(grid, dev.n_sms * int(p["ctas_per_sm"])) * stages * 128.0 * rows * pieces
    bandwidth = min(hbm * RUN_EFFICIENCY.get(pieces, 0.95), inflight / DRAM_LATENCY_US)
    t_dram = dram_bytes / bandwidth
    t_l2 = (small_tiles * x_bytes + Y_L2_WEIGHT * y_bytes) / (hbm * sp.l2_bw_ratio)
    sms = min(grid, dev.n_sms)
    # both boxes of a unit's stages; where small-side tiles share a row block, all but the first read of its rows
    # come from L2, counted at the small operand's weight
    x_weight = (1.0 + Y_L2_WEIGHT * (small_tiles - 1)) / small_tiles
    unit_bytes = 128.0 * pieces * (rows * x_weight + tile_s) * chunks / (ksplit * cluster)
    t_fill = units_per_cta * (grid / sms) * unit_bytes / SM_FILL_BYTES_PER_US   # CTAs sharing an SM share its fill
    flops = 2.0 * row_blocks * rows * small_tiles * tile_s * chunks * 64 * pieces
    t_mma = flops / (dev.peak_tflops * 1e6 * WGMMA_EFFICIENCY * min(1.0, grid / dev.n_sms))
    body = max(max(t_dram, t_l2, t_mma) * imbalance, t_fill)
    if (2 * K) % 128:
        body *= K_PITCH_FACTOR
    if stages <= 2:
        body *= SHALLOW_RING_FACTOR
    reduction = 0.0
    if ksplit > 1:
        partial_bytes = 4.0 * M * N * ksplit
        reduction = SPLIT_LAUNCH_US + 2 * partial_bytes / (hbm * sp.l2_bw_ratio) + 2.0 * M * N / hbm
    if cluster > 1:
        recv = (cluster - 1) * (rows // cluster) * tile_s * 4.0
        reduction += CLUSTER_PUSH_US + recv / DSMEM_BYTES_PER_US
    fixed = sp.launch_us + DRAM_LATENCY_US + (sp.cluster_launch_us if cluster > 1 else 0.0)
    return SimBreakdown(total_us=fixed + body + reduction, fixed_us=fixed, compute_us=t_mma, l2_us=t_l2,
                        dram_us=t_dram, reduction_us=reduction, iteration_us=0.0, epilogue_us=0.0,
                        tiles=row_blocks * small_tiles, ctas=grid, waves=units / grid, stages=stages,
                        mode="split_k" if ksplit > 1 or cluster > 1 else "data_parallel", dram_bytes=dram_bytes,
                        l2_bytes=small_tiles * x_bytes + y_bytes)
