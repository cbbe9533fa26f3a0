"""The simulator model of the `sm90_cutlass` family: H100/H200 device time of a CUTLASS 3.x
CollectiveBuilder GEMM (TMA + WGMMA, warp-specialised) from its parameters. No GPU needed.

The family points here (`simulator_model="evaluator.sim_sm90:model"`); the simulator calls
`model(params, problem, sim_params, device) -> SimBreakdown` with a valid, normalised param dict.
It is a model, not a measurement: use it to test the search machinery and to rank candidates
roughly, never to claim a speedup.

The model (each term is a named function below; every coefficient lives in `SimParams`)
---------------------------------------------------------------------------------------
  time = launch + prologue + [stream-K workspace memset]
       + soft_max(compute critical path + dram_interference * DRAM time,
                  L2->SM traffic time, DRAM traffic time)
       + split-K reduction

* compute critical path (`schedule_time_us`): the persistent scheduler deals tiles (padded to
  cluster x swizzle multiples, as CUTLASS does) to the CTAs it launches (`persistent_ctas`: CUTLASS's
  estimate from the SM count; `usable_ctas`, the clusters the device runs at once, with cluster_grid
  occupancy); a CTA's time is its tile count x (mainloop + exposed epilogue). A kernel of one CTA per tile
  (sm90_lean, `persistent=False`) has its tiles padded to whole clusters only, in the hardware's order (M
  fastest), in waves of `usable_ctas`. (Model revision 2, kept for older campaigns: every kernel as a
  persistent one on `usable_ctas`.) From revision 6 such a kernel with an explicit stage count that leaves room
  for two or more CTAs an SM (`ws_resident_ctas`) runs its grid in waves of that many times `usable_ctas` where
  the grid holds more CTAs than the SMs, the CTAs of an SM sharing its tensor pipe and ingress
  (`co_resident_ctas`).
  Stream-K spreads the K iterations evenly over the SMs (hybrid data-parallel + stream-K under
  the heuristic decomposition) and pays a fixup per partial tile; split-K multiplies the tile
  count and adds a reduction through an fp32 workspace.
* mainloop iteration (`mainloop_iteration_us`): wgmma m64nNk16 issue rate (tensor pipe vs
  shared-memory operand bandwidth, so small tile N is less efficient), per-iteration barrier
  overhead, SM ingress bandwidth, and load latency that fewer than ~3 stages cannot hide.
* memory (`traffic_bytes`, `wave_footprint_bytes`): L2->SM bytes (A/B tiles per k-iteration, divided by cluster
  multicast) over L2 bandwidth; DRAM bytes = unique operand bytes + the re-reads that the
  raster order / swizzle footprint of a wave causes when the operands exceed L2.
* epilogue (`epilogue_us`): tile_m x tile_n x 2 bytes stored (TMA through shared memory, or
  direct stores); ping-pong hides most of it behind the other warpgroup's mainloop.

The vendor emulation (`evaluator.sim_vendor`) runs this same model over a fixed set of good
configurations (`config_params` checks them against this family's rules).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from genome import Genome, Problem, SearchSpace
from genome import sm90_cutlass_space as _sm90
from genome.sm90_resources import ws_resident_ctas

from .sim_device import DeviceSpec, SimBreakdown, SimParams, cdiv


# ---------------------------------------------------------------------------------------------
# model terms
# ---------------------------------------------------------------------------------------------

def soft_max(values: Iterable[float], p: float) -> float:
    """Smooth maximum (p-norm) of non-negative times: overlapping limits cost a little more than
    the largest alone; large p approaches max()."""
    vals = [v for v in values if v > 0]
    if not vals:
        return 0.0
    top = max(vals)
    return top * sum((v / top) ** p for v in vals) ** (1.0 / p)


def usable_ctas(cluster_size: int, dev: DeviceSpec) -> int:
    """CTAs that can run at once, one per SM, when each cluster's CTAs must co-reside in one GPC."""
    return min(dev.n_sms, sum((g // cluster_size) * cluster_size for g in dev.gpc_sms))


def persistent_ctas(cluster_size: int, dev: DeviceSpec) -> int:
    """CTAs CUTLASS's sm90 persistent tile scheduler launches (`get_max_cta_occupancy`) when the kernel
    leaves `KernelHardwareInfo::max_active_clusters` at 0 (cluster_grid cutlass): it assumes GPCs of 18 SMs,
    so on 132 SMs it launches 29 clusters of 4 and 14 of 8 where the H200 runs 30 and 15. Never more
    than the device runs at once (`usable_ctas`)."""
    if cluster_size <= 1:
        return dev.n_sms
    per_gpc = 18
    gpcs, residual = (1, 0) if dev.n_sms < per_gpc else divmod(dev.n_sms, per_gpc)
    ctas = gpcs * (per_gpc - per_gpc % cluster_size) + residual - residual % cluster_size
    return min(dev.n_sms, ctas, usable_ctas(cluster_size, dev))


def co_resident_ctas(params: Mapping[str, Any], grid_ctas: int, usable: int, dev: DeviceSpec) -> int:
    """CTAs of a one-CTA-a-tile kernel that share an SM from model revision 6 (1 before): the hardware spreads a
    grid over the SMs before it puts a second CTA on one, so a grid of at most `usable` CTAs runs one an SM, and
    a larger one as many as fit (`ws_resident_ctas`: shared memory, threads, registers). Measured on an H100
    (session 54, docs/results/splitk-two-ctas): 192-256 CTAs of a 64x128 ws tile with 4 stages took 0.89-0.96x
    the time of the same tile with the automatic stage count (one CTA an SM, two waves)."""
    if dev.model_revision < 6 or grid_ctas <= usable:
        return 1
    return min(ws_resident_ctas(params), cdiv(grid_ctas, usable))


def log_swizzle(tiles_m: int, tiles_n: int, max_swizzle: int) -> int:
    """CUTLASS sm90 tile scheduler's swizzle choice (get_log_swizzle_size)."""
    small = min(tiles_m, tiles_n)
    if max_swizzle >= 8 and small >= 6:
        return 3
    if max_swizzle >= 4 and small >= 3:
        return 2
    if max_swizzle >= 2 and small >= 2:
        return 1
    return 0


def raster_order(raster: str, tiles_m: int, tiles_n: int) -> str:
    """'along_m' or 'along_n'; CUTLASS's heuristic rasters along M when N has more tiles."""
    if raster == "heuristic":
        return "along_m" if tiles_n > tiles_m else "along_n"
    return raster


def wave_footprint_bytes(problem: Problem, tm: int, tn: int, tiles_m: int, tiles_n: int, ctas: int,
                         order: str, swizzle: int) -> float:
    """Unique A + B bytes that one wave of `ctas` concurrent tiles touches, given the raster order
    (the fast dimension) and the swizzle (how many tiles of the other dimension advance together)."""
    if order == "along_m":
        fast_tiles, slow_tiles = tiles_m, tiles_n
    else:
        fast_tiles, slow_tiles = tiles_n, tiles_m
    s = max(1, min(swizzle, slow_tiles))
    if ctas <= s * fast_tiles:
        slow, fast = s, min(fast_tiles, cdiv(ctas, s))
    else:
        fast, slow = fast_tiles, min(slow_tiles, cdiv(ctas, fast_tiles))
    rows_tiles, cols_tiles = (fast, slow) if order == "along_m" else (slow, fast)
    rows = min(problem.m, rows_tiles * tm)
    cols = min(problem.n, cols_tiles * tn)
    return 2.0 * problem.k * (rows + cols)


def traffic_bytes(problem: Problem, tm: int, tn: int, cm: int, cn: int, ctas: int, splits: int, order: str,
                  swizzle: int, sp: SimParams, dev: DeviceSpec) -> tuple[float, float]:
    """(L2->SM operand bytes, DRAM operand bytes) of the whole kernel.

    L2->SM: every tile reads its A rows and B columns over all of K; a cluster of cluster_n CTAs
    along N shares (multicasts) the A tile, cluster_m CTAs along M share the B tile.
    DRAM: A and B once if they fit in the usable L2; otherwise each wave also re-reads the part of
    its footprint (set by raster order and swizzle) that L2 could not keep, in proportion to how
    far the operands exceed L2."""
    M, N, K = problem.m, problem.n, problem.k
    tiles_m, tiles_n = cdiv(M, tm), cdiv(N, tn)
    l2 = 2.0 * K * (tiles_n * M / min(cn, tiles_n) + tiles_m * N / min(cm, tiles_m))
    unique = 2.0 * K * (M + N)
    per_wave = max(1, ctas // splits)
    waves = max(1.0, tiles_m * tiles_n / per_wave)
    footprint = wave_footprint_bytes(problem, tm, tn, tiles_m, tiles_n, per_wave, order, swizzle)
    miss = max(0.0, 1.0 - dev.l2_bytes * sp.l2_usable_fraction / unique)
    return l2, unique + max(0.0, waves * footprint - unique) * miss


def row_pitch_factor(k: int, sp: SimParams) -> float:
    """L2 traffic multiplier for A and W rows of 2k bytes (1 when they are whole 128-byte lines)."""
    pitch = 2 * k
    if pitch % 128 == 0:
        return 1.0
    if pitch % 64 == 0:
        return sp.pitch64_l2_factor
    if pitch % 32 == 0:
        return sp.pitch32_l2_factor
    return sp.pitch16_l2_factor


def mma_iteration_us(tm: int, tn: int, tk: int, schedule: str, cluster_size: int, sp: SimParams,
                     dev: DeviceSpec, split_n: bool = False) -> float:
    """Tensor-pipe time of one mainloop k-iteration of a CTA.

    A wgmma m64nNk16 takes N/2 clocks of the tensor pipe (4096 flop/clk/SM) but must also read its
    A (64x16) and B (Nx16) operands from shared memory; small N is operand-bandwidth bound. With the
    warpgroups split along N (`split_n`) each WGMMA is tn/2 wide and there are twice as many: each
    warpgroup reads the whole A tile."""
    n = tn / 2.0 if split_n else float(tn)
    per_step = max(n / 2.0, (2048.0 + 32.0 * n) / sp.smem_operand_bytes_per_clk) + sp.wgmma_issue_clk
    clk = (tm / 64.0) * (tn / n) * (tk / 16.0) * per_step + sp.k_iter_overhead_clk
    if cluster_size > 1:
        clk += sp.cluster_iter_overhead_clk
    eff = sp.mma_clock_efficiency * (sp.pingpong_mma_efficiency if schedule == "pingpong" else 1.0)
    return clk / dev.clk_per_us / eff


def ingress_iteration_us(tm: int, tn: int, tk: int, sp: SimParams, dev: DeviceSpec) -> float:
    """Time for the A and B tiles of one k-iteration to arrive in one SM's shared memory."""
    return (tm + tn) * tk * 2.0 / (sp.sm_ingress_bytes_per_clk * dev.clk_per_us)


def mainloop_iteration_us(t_mma: float, t_ingress: float, stages: int, latency_us: float, sp: SimParams) -> float:
    """One k-iteration in steady state: tensor pipe, SM ingress, and the time a stage's load takes
    (latency + transfer), which the `stages - 1` loads in flight must cover: with 2 stages a whole
    load must fit in one iteration, so few stages expose latency."""
    in_flight = (latency_us + t_ingress) / max(1, stages - 1)
    return soft_max((t_mma, t_ingress, in_flight), sp.roofline_sharpness)


def epilogue_us(tm: int, tn: int, epilogue: str, sp: SimParams, dev: DeviceSpec) -> float:
    """Convert and store a tile_m x tile_n fp16 tile (TMA through smem, or direct stores)."""
    t = sp.epilogue_fixed_us + tm * tn * 2.0 / (sp.epilogue_bytes_per_clk * dev.clk_per_us)
    return t * (sp.nosmem_epilogue_factor if epilogue == "nosmem" else 1.0)


def exposed_epilogue_us(t_epi: float, t_main: float, schedule: str, sp: SimParams) -> float:
    """Epilogue time per tile that the math pipe waits for. Ping-pong runs one warpgroup's
    epilogue under the other's mainloop; cooperative exposes it all."""
    if schedule != "pingpong":
        return t_epi
    return max(0.0, t_epi - t_main) + (1.0 - sp.pingpong_epilogue_hidden) * min(t_epi, t_main)


def fixup_us(tm: int, tn: int, pieces: int, reduction: str, sp: SimParams, dev: DeviceSpec) -> float:
    """Stream-K fixup that the owner of a tile split into `pieces` waits for: the flag wait, then
    one fp32 partial tile read + accumulated per other piece (serial when deterministic)."""
    rw = 2.0 * tm * tn * 4.0 / (sp.sm_ingress_bytes_per_clk * dev.clk_per_us)
    chain = sp.deterministic_reduction_factor if reduction == "deterministic" else sp.nondeterministic_chain_factor
    return sp.streamk_fixup_us + max(1, pieces - 1) * rw * chain


def splitk_reduction_us(problem: Problem, splits: int, reduction: str, sp: SimParams, dev: DeviceSpec) -> float:
    """Split-K reduction: write and read back splits x M x N fp32 partials (L2 if they fit)."""
    nbytes = 2.0 * splits * problem.m * problem.n * 4.0
    bw = _hbm_bytes_per_us(sp, dev)
    if nbytes / 2.0 <= dev.l2_bytes * sp.l2_usable_fraction:
        bw *= sp.l2_bw_ratio
    t = nbytes / bw + sp.splitk_sync_us
    return t * (sp.deterministic_reduction_factor if reduction == "deterministic" else 1.0)


def _hbm_bytes_per_us(sp: SimParams, dev: DeviceSpec) -> float:
    return dev.hbm_tbps * sp.hbm_efficiency * 1e6


def schedule_time_us(mode: str, n_units: int, ctas: int, k_iters: int, t_iter: float, t_epi_exposed: float,
                     t_epi: float, t_fix: "Callable[[int], float]", sp: SimParams) -> tuple[float, int]:
    """Compute critical path of the busiest CTA. Returns (time, number of fixups on the grid).

    data_parallel: whole tiles dealt round-robin, ceil(tiles / ctas) per CTA.
    stream_k: all tiles' K iterations shared evenly by up to `ctas` workers (each unit at least
      `streamk_min_iters` iterations); a worker writes one partial (a flag round trip) and, as
      the owner of a split tile, waits for the fixup chain `t_fix(pieces)`.
    hybrid: data-parallel for all but the last one or two waves, stream-K for the rest.
    """
    t_main = k_iters * t_iter
    if mode == "data_parallel" or n_units == 0:
        per = cdiv(n_units, ctas)
        return per * (t_main + t_epi_exposed) + (t_epi - t_epi_exposed), 0
    if mode == "hybrid":
        full = n_units // ctas
        dp_waves = max(0, full - 1)
        sk_tiles = n_units - dp_waves * ctas
        t_sk, fixes = schedule_time_us("stream_k", sk_tiles, ctas, k_iters, t_iter, t_epi_exposed, t_epi, t_fix, sp)
        return dp_waves * (t_main + t_epi_exposed) + t_sk, fixes
    # stream_k
    total_iters = n_units * k_iters
    workers = max(1, min(ctas, int(total_iters // max(1.0, sp.streamk_min_iters))))
    per_iters = cdiv(total_iters, workers)
    if workers <= n_units and n_units % workers == 0:
        per = n_units // workers
        return per * (t_main + t_epi_exposed) + (t_epi - t_epi_exposed), 0
    tiles_per_worker = max(1, cdiv(per_iters, k_iters))
    pieces = max(2, cdiv(workers, n_units))
    t = (per_iters * t_iter + tiles_per_worker * t_epi_exposed + (t_epi - t_epi_exposed)
         + t_fix(pieces) + sp.streamk_fixup_us)
    return t, workers


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec,
          persistent: bool = True) -> SimBreakdown:
    """Simulated device time of an sm90_cutlass configuration (a valid, normalised param dict).
    `persistent` False: a kernel of one CTA per tile (sm90_lean), whose grid the hardware schedules; from
    model revision 3 its tile grid is padded to whole clusters only (not to the swizzle), and its clusters
    are the ones the device runs at once. A persistent kernel's, from revision 3, are CUTLASS's
    (`persistent_ctas`), unless it asks the device (cluster_grid occupancy)."""
    M, N, K = problem.m, problem.n, problem.k
    tm, tn, tk = params["tile_m"], params["tile_n"], params["tile_k"]
    cm, cn = params["cluster_m"], params["cluster_n"]
    csize = cm * cn
    schedule = params["schedule"]
    stages = params["stages"] or _sm90.max_stages(params)
    k_iters = cdiv(K, tk)
    tiles_m, tiles_n = cdiv(M, tm), cdiv(N, tn)
    real_tiles = tiles_m * tiles_n

    # tiles: CUTLASS's persistent scheduler pads the tile grid to multiples of swizzle x cluster in each dimension
    # (from revision 3, a kernel of one CTA per tile to whole clusters only)
    revised = dev.model_revision >= 3
    s = 1 if revised and not persistent else 1 << log_swizzle(tiles_m, tiles_n, params["swizzle"])
    ptm = cdiv(tiles_m, s * cm) * s * cm
    ptn = cdiv(tiles_n, s * cn) * s * cn
    cutlass_grid = revised and persistent and params.get("cluster_grid", "cutlass") == "cutlass"
    ctas_max = persistent_ctas(csize, dev) if cutlass_grid else usable_ctas(csize, dev)
    n_clusters = (ptm // cm) * (ptn // cn)
    # CTAs an SM runs at once (one CTA a tile, an explicit stage count: from revision 6), which share its pipes
    share = 1 if persistent else co_resident_ctas(params, n_clusters * csize, ctas_max, dev)
    ctas_max *= share
    slots = max(1, ctas_max // csize)
    ctas = min(ctas_max, n_clusters * csize)

    # scheduling mode
    mode = "data_parallel"
    splits = 1
    if params["scheduler"] == "streamk":
        splits = max(1, min(int(params["splits"]), k_iters))
        decomposition = params["decomposition"]
        if splits > 1:
            mode = "split_k"
        elif decomposition == "stream_k":
            mode = "hybrid" if n_clusters > slots else "stream_k"
        elif decomposition == "heuristic":
            if n_clusters % slots == 0 or k_iters < 2 * sp.streamk_min_iters:
                mode = "data_parallel"
            else:
                mode = "hybrid" if n_clusters > slots else "stream_k"

    # memory traffic
    # a kernel of one CTA per tile ignores the raster knob: its CTAs start in the hardware's order, M fastest
    order = "along_m" if revised and not persistent else raster_order(params["raster"], tiles_m, tiles_n)
    work_ctas = ctas if mode != "split_k" else min(ctas_max, real_tiles * splits)
    l2_bytes, dram_operand = traffic_bytes(problem, tm, tn, cm, cn, work_ctas, splits, order, s, sp, dev)
    l2_bytes *= row_pitch_factor(K, sp)
    dram_bytes = dram_operand + 2.0 * M * N  # + C written once
    miss_rate = min(1.0, dram_operand / l2_bytes) if l2_bytes > 0 else 1.0
    latency = sp.load_latency_us + miss_rate * sp.miss_latency_us

    # per-iteration and per-tile
    t_mma = mma_iteration_us(tm, tn, tk, schedule, csize, sp, dev, split_n=_sm90.split_n(params))
    t_in = ingress_iteration_us(tm, tn, tk, sp, dev)
    t_iter = mainloop_iteration_us(share * t_mma, share * t_in, stages, latency, sp)
    t_epi = epilogue_us(tm, tn, params["epilogue"], sp, dev)
    reduction = params["reduction"]
    t_fix = lambda pieces: fixup_us(tm, tn, pieces, reduction, sp, dev)  # noqa: E731

    reduction_time = 0.0
    fixed = sp.launch_us + sp.prologue_us + sp.load_latency_us + sp.miss_latency_us
    if csize > 1:
        fixed += sp.cluster_launch_us
    if params["scheduler"] == "streamk":
        fixed += sp.streamk_scheduler_us
    if mode == "split_k":
        k_unit = cdiv(k_iters, splits)
        units = n_clusters * splits
        t_exp = exposed_epilogue_us(t_epi, k_unit * t_iter, schedule, sp)
        compute, _ = schedule_time_us("data_parallel", units, slots, k_unit, t_iter, t_exp, t_epi, t_fix, sp)
        reduction_time = splitk_reduction_us(problem, splits, reduction, sp, dev)
        fixed += sp.streamk_workspace_us
        l2_bytes += 2.0 * splits * M * N * 4.0
        ctas = min(ctas_max, units * csize)
    else:
        t_exp = exposed_epilogue_us(t_epi, k_iters * t_iter, schedule, sp)
        # clusters move together: a cluster's tile group takes the time of one tile per CTA
        compute, fixes = schedule_time_us(mode, n_clusters, slots, k_iters, t_iter, t_exp, t_epi, t_fix, sp)
        if fixes:
            fixed += sp.streamk_workspace_us
            l2_bytes += fixes * 2.0 * tm * tn * 4.0 * csize
            ctas = min(ctas_max, max(ctas, fixes * csize))

    hbm = _hbm_bytes_per_us(sp, dev)
    t_dram = dram_bytes / hbm
    t_l2 = l2_bytes / (hbm * sp.l2_bw_ratio)
    body = soft_max((compute + sp.dram_interference * t_dram, t_l2, t_dram), sp.roofline_sharpness)
    total = fixed + body + reduction_time
    return SimBreakdown(total_us=total, fixed_us=fixed, compute_us=compute, l2_us=t_l2, dram_us=t_dram,
                        reduction_us=reduction_time, iteration_us=t_iter, epilogue_us=t_epi,
                        tiles=ptm * ptn * (splits if mode == "split_k" else 1), ctas=ctas,
                        waves=ptm * ptn * (splits if mode == "split_k" else 1) / max(1, slots * csize),
                        stages=stages, mode=mode, dram_bytes=dram_bytes, l2_bytes=l2_bytes)



# ---------------------------------------------------------------------------------------------
# configurations of this family (for the vendor emulation)
# ---------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def space() -> SearchSpace:
    """The sm90_cutlass search space (its rules), built once."""
    return _sm90.make_space()


def config_params(cfg: Mapping[str, Any], problem: Problem) -> "dict[str, Any] | None":
    """The normalised params of an sm90_cutlass configuration, or None if it breaks a rule of the
    family for `problem`."""
    genome = Genome.make(_sm90.FAMILY, dict(cfg))
    if space().violations(genome, problem):
        return None
    return space().normalise(genome).param_dict
