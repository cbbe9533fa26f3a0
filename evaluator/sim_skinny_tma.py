"""The simulator model of the `skinny_tma` family (TMA-fed streaming mma.sync kernel for skinny GEMMs).

  time = launch + first-load latency
       + max(streamed bytes / achievable bandwidth, (streamed + small-operand bytes) / L2 bandwidth)
         x the row-block imbalance + a row block's end (its warps' sums through shared memory) per block a CTA

* achievable bandwidth: the measured HBM bandwidth times the run-length efficiency of `pieces` (runs of
  128 x pieces bytes of a row; `RUN_EFFICIENCY`), capped by Little's law: the ring's bytes in flight on
  the grid's CTAs over the loaded DRAM latency;
* the small operand: a box of 16 rows (8 where it has at most 8) beside every stage, re-read from L2 once per
  row block (y_resident: once per CTA, with its first row block; the ring then holds X alone);
* an SM's fill rate: both boxes through its TMA unit at `SM_FILL_BYTES_PER_US` (binding where the row blocks
  are fewer than the SMs, and for 16-row boxes, whose small-operand box is as large as the streamed one);
* the consumer warps: each k16 step of a warp at `STEP_US` (binding with few warps a 16-row group);
* rows off 128-byte pitches (K % 64 != 0): `K_PITCH_FACTOR` on the body;
* imbalance: a CTA takes row blocks blockIdx.x, + grid, ...; the grid is SMs x ctas_per_sm (at most the row
  blocks), so the busiest CTA takes ceil(blocks / grid) of them where the average is blocks / grid.

A model, not a measurement: fitted by hand (session 45) to the prototype's runs on an H100 (12 decode shapes x
up to 24 configurations, docs/results/h200-tma-stream/h100-s45/skinny_tma.json, and the TMA read probe
tma_stream.json), the K-pitch factor to the family's protocol bench there (h100-s45/bench);
scripts/model_check.py prints its rank correlation with both. No H200 measurement of the family yet.
"""

from __future__ import annotations

from typing import Any, Mapping

from genome import Problem
from genome.skinny_tma_space import y_box_rows

from .sim_device import DeviceSpec, SimBreakdown, SimParams, cdiv

DRAM_LATENCY_US = 1.0        # loaded latency of a TMA box from HBM
# share of the HBM bandwidth a stream of runs of 128 x pieces bytes a row reaches (the probe on an H100: boxes of
# 8-64 rows, one to sixteen 128-byte pieces a row, 0.87-0.92 of the read ceiling at one piece, 0.93-1.0 at 8-16)
RUN_EFFICIENCY = {1: 0.86, 2: 0.91, 4: 0.93, 8: 0.95, 16: 0.955}
SM_FILL_BYTES_PER_US = 62e3  # what one SM's TMA loads bring in, both boxes counted (H100, where the row blocks
                             # were fewer than the SMs: 16, 32 and 64-row boxes at 16x1024x16384 took 58-66 GB/s)
# a consumer warp's k16 step (two ldmatrix, one or two mma.sync): the prototype, whose steps were one chain of
# dependent mma, took about 0.055 us a step where its 2 warps a group bound it (R16_D8_S4_W2 at 16x1024x16384,
# 30.2 us for 512 steps a warp); the family's kernel alternates two accumulator sets within a stage, assumed to
# halve it (not measured) where a warp takes two or more steps a stage (one step a stage: one chain)
STEP_US_ONE_CHAIN = 0.055
STEP_US = 0.03
# rows whose pitch (2K bytes) is not a multiple of 128: every 128-byte box row straddles two lines, as for the sm90
# TMA kernels (docs/results/h200-k-pitch). The seeds' best at K = 4104 and 3000 (protocol bench, H100) took 1.16x
# the model's time without it, 1.08x at 8192x13x4104; aligned shapes 0.95-1.04x.
K_PITCH_FACTOR = 1.15
BLOCK_END_US = 0.35          # a row block's sums through shared memory, two named barriers, the stores
Y_L2_WEIGHT = 0.6            # the small operand's box against the streamed one, per byte through L2 and the TMA unit


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    p = params
    M, N, K = problem.m, problem.n, problem.k
    R, S = (M, N) if M > N else (N, M)
    rows, pieces, stages = int(p["rows"]), int(p["pieces"]), int(p["stages"])
    row_blocks = cdiv(R, rows)
    grid = min(row_blocks, dev.n_sms * int(p["ctas_per_sm"]))
    chunks = cdiv(K, 64 * pieces)
    blocks_per_cta = cdiv(row_blocks, grid)
    imbalance = blocks_per_cta / (row_blocks / grid)

    hbm = sp.hbm_efficiency * dev.hbm_tbps * 1e6          # bytes per microsecond
    x_bytes = 2.0 * R * K
    y_reads = grid if p.get("y_resident", 0) else row_blocks  # Y's K read from L2 once a CTA, or once a row block
    y_bytes = 2.0 * y_box_rows(S) * chunks * 64 * pieces * y_reads  # Y's box (8 or 16 rows) each stage, from L2
    dram_bytes = x_bytes + 2.0 * S * K + 2.0 * M * N
    inflight = grid * stages * 128.0 * rows * pieces
    bandwidth = min(hbm * RUN_EFFICIENCY.get(pieces, 0.95), inflight / DRAM_LATENCY_US)
    t_dram = dram_bytes / bandwidth
    t_l2 = (x_bytes + Y_L2_WEIGHT * y_bytes) / (hbm * sp.l2_bw_ratio)
    t_fill = (x_bytes + y_bytes) / (SM_FILL_BYTES_PER_US * min(grid, dev.n_sms))
    # mma.sync m16n8k16: one or two n8 tiles a 16-row group and k16 step (a few percent of the time at most)
    flops = 2.0 * cdiv(R, 16) * 16 * (8 if S <= 8 else 16) * chunks * 64 * pieces
    t_mma = flops / (dev.peak_tflops * 1e6 * 0.6 * min(1.0, grid / dev.n_sms))
    groups = rows // 16
    split = max(1, int(p["consumer_warps"]) // groups)
    steps = 4 * pieces / split                               # a warp's k16 steps a stage
    t_consume = row_blocks / grid * chunks * steps * (STEP_US if steps >= 2 else STEP_US_ONE_CHAIN)
    body = max(t_dram, t_l2, t_fill, t_mma, t_consume) * imbalance
    if (2 * K) % 128:
        body *= K_PITCH_FACTOR
    body += BLOCK_END_US * blocks_per_cta
    fixed = sp.launch_us + DRAM_LATENCY_US
    return SimBreakdown(total_us=fixed + body, fixed_us=fixed, compute_us=t_mma, l2_us=t_l2, dram_us=t_dram,
                        reduction_us=BLOCK_END_US * blocks_per_cta, iteration_us=0.0, epilogue_us=0.0,
                        tiles=row_blocks, ctas=grid, waves=row_blocks / grid, stages=stages,
                        mode="data_parallel", dram_bytes=dram_bytes, l2_bytes=x_bytes + y_bytes)
