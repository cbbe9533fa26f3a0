"""Analytic simulator of H100/H200 device time for `sm90_cutlass` genomes (no GPU needed).

Used when no GPU is present. Every figure it returns is labelled simulated
(`Measurement.simulated` / `BaselineSet.simulated` are True, `describe()` says "simulated").
It is a model, not a measurement: use it to test the search machinery and to rank candidates
roughly, never to claim a speedup.

The model (each term is a named function below; every coefficient lives in `SimParams`)
---------------------------------------------------------------------------------------
  time = launch + prologue + [stream-K workspace memset]
       + soft_max(compute critical path + dram_interference * DRAM time,
                  L2->SM traffic time, DRAM traffic time)
       + split-K reduction

* compute critical path (`schedule_time_us`): the persistent scheduler deals tiles (padded to
  cluster x swizzle multiples, as CUTLASS does) to the CTAs that can co-reside (`usable_ctas`:
  a cluster must fit in one GPC); a CTA's time is its tile count x (mainloop + exposed epilogue).
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

Vendor baselines (`simulate_baselines`) are the same model over a fixed set of good
configurations with the vendor's advantages (lower launch floor, slightly better efficiency).

Calibration file format (evaluator/calibration/<name>.json), stable, version 1
-----------------------------------------------------------------------------
    {
      "format": "evogemm-simparams",        # fixed tag
      "version": 1,                          # bumped only on incompatible change
      "device": "h200",                      # device the coefficients describe (informational)
      "params": {"<SimParams field>": <number>, ...},
                                             # any subset of SimParams fields; missing fields take
                                             # the built-in default; unknown fields are an error
      "meta": {                              # provenance, free-form; calibrate_file writes:
        "source": "...",                     #   measurement file, or "hand-set ..."
        "date": "YYYY-MM-DDTHH:MM:SSZ",
        "records": 123,                      #   records used in the fit
        "fitted": ["mma_clock_efficiency", ...],
        "spearman_before": 0.9, "spearman_after": 0.95,
        "mean_abs_log_error_before": 0.2, "mean_abs_log_error_after": 0.1
      }
    }

Measurement records for `calibrate_file` are a JSON list of
    {"genome": {<Genome.to_dict()>}, "problem": "MxNxK", "time_us": <device median, us>}

CLI:  python -m evaluator.simulator calibrate MEASUREMENTS.json OUT.json
      python -m evaluator.simulator predict GENOME.json MxNxK
      python -m evaluator.simulator baselines MxNxK
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import random
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from genome import Genome, Problem, get_space
from genome import sm90_cutlass_space as _sm90

from .api import (STATUS_INVALID, STATUS_OK, STATUS_REJECTED, STATUS_UNSUPPORTED, BaselineSet, Measurement,
                  Timing)

FORMAT_TAG = "evogemm-simparams"
FORMAT_VERSION = 1
CALIBRATION_DIR = Path(__file__).resolve().parent / "calibration"
DEFAULT_CALIBRATION = CALIBRATION_DIR / "h200.json"
SUPPORTED_FAMILIES = (_sm90.FAMILY,)
BASELINE_NAMES = ("torch_tn", "torch_nn", "cublaslt_heuristic", "cublaslt_autotuned")

_MIB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# device facts and model coefficients
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceSpec:
    """Facts of the device (not fitted). `gpc_sms` decides which cluster sizes fill all SMs."""

    name: str
    n_sms: int
    gpc_sms: tuple[int, ...]
    peak_tflops: float        # dense fp16 tensor peak, datasheet
    clock_ghz: float          # the clock the datasheet peak assumes (4096 flop/clk/SM)
    hbm_tbps: float           # measured copy bandwidth
    l2_bytes: int
    smem_per_block: int

    @property
    def clk_per_us(self) -> float:
        return self.clock_ghz * 1e3


DEVICES: dict[str, DeviceSpec] = {
    "h200": DeviceSpec("H200", 132, (18, 18, 16, 16, 16, 16, 16, 16), 989.4, 1.83, 4.3, 60 * _MIB,
                       _sm90.SMEM_BYTES_PER_BLOCK),
    "h100": DeviceSpec("H100", 132, (18, 18, 16, 16, 16, 16, 16, 16), 989.4, 1.83, 3.35, 50 * _MIB,
                       _sm90.SMEM_BYTES_PER_BLOCK),
}


def get_device(device: "str | DeviceSpec") -> DeviceSpec:
    if isinstance(device, DeviceSpec):
        return device
    key = str(device).lower().replace("nvidia", "").replace("-", "").replace(" ", "")
    for name in DEVICES:
        if key.startswith(name):
            return DEVICES[name]
    raise ValueError(f"unknown device {device!r} for the simulator; known: {', '.join(DEVICES)}")


@dataclass(frozen=True)
class SimParams:
    """Every coefficient of the model. Times in microseconds unless the name says clk/bytes.

    `FIT_BOUNDS` lists the fields `fit_calibration` adjusts and their allowed ranges.
    """

    # -- mainloop (tensor pipe) ------------------------------------------------------------
    mma_clock_efficiency: float = 0.88     # sustained fraction of the datasheet tensor rate (clocks under load)
    smem_operand_bytes_per_clk: float = 128.0  # shared-memory bandwidth feeding wgmma operands (SS mode)
    wgmma_issue_clk: float = 2.0           # extra clocks per wgmma m64nNk16 (issue, fences)
    k_iter_overhead_clk: float = 40.0      # per mainloop iteration: barrier wait/arrive, TMA issue
    cluster_iter_overhead_clk: float = 12.0  # per iteration extra when the CTA is in a cluster (multicast sync)
    pingpong_mma_efficiency: float = 0.97  # one warpgroup at a time drives the tensor pipe
    sm_ingress_bytes_per_clk: float = 96.0  # L2 -> one SM's shared memory
    load_latency_us: float = 0.45          # TMA load latency when it hits L2
    miss_latency_us: float = 0.3          # extra latency of a load that misses to DRAM
    # -- memory ----------------------------------------------------------------------------
    hbm_efficiency: float = 1.0            # multiplies the device's measured HBM bandwidth
    l2_bw_ratio: float = 2.5               # L2 -> SM aggregate bandwidth as a multiple of HBM
    l2_usable_fraction: float = 0.8        # share of L2 that holds operands
    dram_interference: float = 0.25        # share of DRAM time not hidden behind compute
    roofline_sharpness: float = 6.0        # p of the soft maximum of compute / L2 / DRAM time
    # -- epilogue --------------------------------------------------------------------------
    epilogue_fixed_us: float = 0.15
    epilogue_bytes_per_clk: float = 48.0   # per SM, TMA epilogue
    nosmem_epilogue_factor: float = 1.35   # direct stores from registers are less coalesced
    pingpong_epilogue_hidden: float = 0.9  # share of the epilogue hidden under the other warpgroup
    # -- scheduling ------------------------------------------------------------------------
    streamk_fixup_us: float = 0.6          # per partial tile: flag wait + workspace round trip latency
    streamk_min_iters: float = 8.0         # fewest K iterations a stream-K unit takes (CUTLASS: 8)
    streamk_workspace_us: float = 1.0      # workspace memset that stream-K / split-K needs
    streamk_scheduler_us: float = 0.2      # extra cost of the stream-K scheduler itself
    deterministic_reduction_factor: float = 1.25  # ordered partial reduction (serial chain)
    nondeterministic_chain_factor: float = 0.6    # unordered partial reduction overlaps partly
    splitk_sync_us: float = 1.0            # split-K: waiting for the last split, then the final pass
    # -- fixed costs -----------------------------------------------------------------------
    launch_us: float = 1.8                 # back-to-back launch in graph replay: start + drain
    prologue_us: float = 0.1              # tensor-map prefetch, barrier init, scheduler setup
    cluster_launch_us: float = 0.1
    # -- vendor (cuBLAS / cuBLASLt) baselines ----------------------------------------------
    vendor_launch_us: float = 1.25
    vendor_prologue_us: float = 0.0
    vendor_efficiency: float = 1.03        # vendor mainloop speed relative to CUTLASS's
    vendor_latency_factor: float = 0.7     # vendor kernels hide first-load latency better
    torch_overhead: float = 0.005          # torch.matmul's relative cost over cuBLASLt top-1
    # -- derived timings -------------------------------------------------------------------
    server_penalty_us: float = 3.0         # one launch after an idle gap, L2 flushed
    server_penalty_rel: float = 0.03
    call_overhead_us: float = 5.0          # synchronised Python call
    timing_spread: float = 0.01            # (max - min) / median of the simulated repeats

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SimParams":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown SimParams fields {sorted(unknown)}")
        values = {}
        for k, v in data.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"SimParams field {k} must be a finite number, got {v!r}")
            values[k] = float(v)
        return cls(**values)


# Fields fitted by `fit_calibration` and their bounds. Vendor and derived-timing fields are not
# fitted from candidate measurements (they do not affect candidate times).
FIT_BOUNDS: dict[str, tuple[float, float]] = {
    "mma_clock_efficiency": (0.5, 1.0),
    "smem_operand_bytes_per_clk": (48.0, 256.0),
    "wgmma_issue_clk": (0.25, 16.0),
    "k_iter_overhead_clk": (4.0, 400.0),
    "cluster_iter_overhead_clk": (1.0, 200.0),
    "pingpong_mma_efficiency": (0.7, 1.0),
    "sm_ingress_bytes_per_clk": (16.0, 256.0),
    "load_latency_us": (0.1, 3.0),
    "miss_latency_us": (0.05, 3.0),
    "hbm_efficiency": (0.6, 1.2),
    "l2_bw_ratio": (1.2, 6.0),
    "l2_usable_fraction": (0.3, 1.0),
    "dram_interference": (0.01, 1.0),
    "roofline_sharpness": (1.5, 16.0),
    "epilogue_fixed_us": (0.01, 2.0),
    "epilogue_bytes_per_clk": (8.0, 256.0),
    "nosmem_epilogue_factor": (0.7, 3.0),
    "pingpong_epilogue_hidden": (0.2, 1.0),
    "streamk_fixup_us": (0.05, 5.0),
    "streamk_workspace_us": (0.05, 5.0),
    "streamk_scheduler_us": (0.01, 3.0),
    "deterministic_reduction_factor": (1.0, 3.0),
    "nondeterministic_chain_factor": (0.1, 1.5),
    "splitk_sync_us": (0.05, 5.0),
    "launch_us": (0.5, 5.0),
    "prologue_us": (0.01, 3.0),
    "cluster_launch_us": (0.01, 2.0),
}


# ---------------------------------------------------------------------------------------------
# calibration files
# ---------------------------------------------------------------------------------------------

def load_calibration(path: "str | Path") -> tuple[SimParams, dict[str, Any]]:
    """Read a calibration JSON (format at the top of this module): (SimParams, meta)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"calibration {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, Mapping) or data.get("format") != FORMAT_TAG:
        raise ValueError(f"calibration {path} is not an {FORMAT_TAG} file (missing \"format\": \"{FORMAT_TAG}\")")
    if int(data.get("version", 0)) > FORMAT_VERSION:
        raise ValueError(f"calibration {path} has version {data.get('version')}; this simulator reads "
                         f"up to {FORMAT_VERSION}")
    params = SimParams.from_dict(data.get("params") or {})
    meta = dict(data.get("meta") or {})
    meta.setdefault("device", data.get("device", "h200"))
    return params, meta


def save_calibration(params: SimParams, path: "str | Path", meta: "Mapping[str, Any] | None" = None,
                     device: str = "h200") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format": FORMAT_TAG, "version": FORMAT_VERSION, "device": device,
           "params": {k: _round(v) for k, v in params.to_dict().items()}, "meta": dict(meta or {})}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def _round(v: float) -> float:
    return float(f"{v:.6g}")


def resolve_calibration(calibration: "str | Path | SimParams | None") -> tuple[SimParams, str]:
    """(params, name): None -> evaluator/calibration/h200.json if present, else built-in defaults.
    A bare name ("h200") is looked up in evaluator/calibration/."""
    if isinstance(calibration, SimParams):
        return calibration, "custom"
    if calibration is None:
        if DEFAULT_CALIBRATION.is_file():
            return load_calibration(DEFAULT_CALIBRATION)[0], DEFAULT_CALIBRATION.stem
        return SimParams(), "built-in defaults"
    path = Path(calibration)
    if not path.exists() and not path.suffix and (CALIBRATION_DIR / f"{calibration}.json").is_file():
        path = CALIBRATION_DIR / f"{calibration}.json"
    if not path.is_file():
        raise FileNotFoundError(f"calibration file {calibration} not found")
    return load_calibration(path)[0], path.stem


# ---------------------------------------------------------------------------------------------
# model terms
# ---------------------------------------------------------------------------------------------

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


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
        slow, fast = s, min(fast_tiles, _cdiv(ctas, s))
    else:
        fast, slow = fast_tiles, min(slow_tiles, _cdiv(ctas, fast_tiles))
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
    tiles_m, tiles_n = _cdiv(M, tm), _cdiv(N, tn)
    l2 = 2.0 * K * (tiles_n * M / min(cn, tiles_n) + tiles_m * N / min(cm, tiles_m))
    unique = 2.0 * K * (M + N)
    per_wave = max(1, ctas // splits)
    waves = max(1.0, tiles_m * tiles_n / per_wave)
    footprint = wave_footprint_bytes(problem, tm, tn, tiles_m, tiles_n, per_wave, order, swizzle)
    miss = max(0.0, 1.0 - dev.l2_bytes * sp.l2_usable_fraction / unique)
    return l2, unique + max(0.0, waves * footprint - unique) * miss


def mma_iteration_us(tm: int, tn: int, tk: int, schedule: str, cluster_size: int, sp: SimParams,
                     dev: DeviceSpec) -> float:
    """Tensor-pipe time of one mainloop k-iteration of a CTA.

    A wgmma m64nNk16 takes N/2 clocks of the tensor pipe (4096 flop/clk/SM) but must also read its
    A (64x16) and B (Nx16) operands from shared memory; small N is operand-bandwidth bound."""
    per_step = max(tn / 2.0, (2048.0 + 32.0 * tn) / sp.smem_operand_bytes_per_clk) + sp.wgmma_issue_clk
    clk = (tm / 64.0) * (tk / 16.0) * per_step + sp.k_iter_overhead_clk
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


@dataclass
class SimBreakdown:
    """The model's terms for one (genome, problem), in microseconds (plus a few facts)."""

    total_us: float
    fixed_us: float
    compute_us: float
    l2_us: float
    dram_us: float
    reduction_us: float
    iteration_us: float
    epilogue_us: float
    tiles: int
    ctas: int
    waves: float
    stages: int
    mode: str                       # data_parallel | stream_k | hybrid | split_k
    dram_bytes: float
    l2_bytes: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


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
        per = _cdiv(n_units, ctas)
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
    per_iters = _cdiv(total_iters, workers)
    if workers <= n_units and n_units % workers == 0:
        per = n_units // workers
        return per * (t_main + t_epi_exposed) + (t_epi - t_epi_exposed), 0
    tiles_per_worker = max(1, _cdiv(per_iters, k_iters))
    pieces = max(2, _cdiv(workers, n_units))
    t = (per_iters * t_iter + tiles_per_worker * t_epi_exposed + (t_epi - t_epi_exposed)
         + t_fix(pieces) + sp.streamk_fixup_us)
    return t, workers


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    """Simulated device time of an sm90_cutlass configuration (a valid, normalised param dict)."""
    M, N, K = problem.m, problem.n, problem.k
    tm, tn, tk = params["tile_m"], params["tile_n"], params["tile_k"]
    cm, cn = params["cluster_m"], params["cluster_n"]
    csize = cm * cn
    schedule = params["schedule"]
    stages = params["stages"] or _sm90.max_stages(params)
    k_iters = _cdiv(K, tk)
    tiles_m, tiles_n = _cdiv(M, tm), _cdiv(N, tn)
    real_tiles = tiles_m * tiles_n

    # tiles: CUTLASS pads the tile grid to multiples of swizzle x cluster in each dimension
    s = 1 << log_swizzle(tiles_m, tiles_n, params["swizzle"])
    ptm = _cdiv(tiles_m, s * cm) * s * cm
    ptn = _cdiv(tiles_n, s * cn) * s * cn
    ctas_max = usable_ctas(csize, dev)
    n_clusters = (ptm // cm) * (ptn // cn)
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
    order = raster_order(params["raster"], tiles_m, tiles_n)
    work_ctas = ctas if mode != "split_k" else min(ctas_max, real_tiles * splits)
    l2_bytes, dram_operand = traffic_bytes(problem, tm, tn, cm, cn, work_ctas, splits, order, s, sp, dev)
    dram_bytes = dram_operand + 2.0 * M * N  # + C written once
    miss_rate = min(1.0, dram_operand / l2_bytes) if l2_bytes > 0 else 1.0
    latency = sp.load_latency_us + miss_rate * sp.miss_latency_us

    # per-iteration and per-tile
    t_mma = mma_iteration_us(tm, tn, tk, schedule, csize, sp, dev)
    t_in = ingress_iteration_us(tm, tn, tk, sp, dev)
    t_iter = mainloop_iteration_us(t_mma, t_in, stages, latency, sp)
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
        k_unit = _cdiv(k_iters, splits)
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
# public prediction helpers
# ---------------------------------------------------------------------------------------------

def _as_problem(problem: "Problem | str | Sequence[int]") -> Problem:
    return Problem.parse(problem)


def _checked_params(genome: "Genome | Mapping[str, Any]", problem: Problem) -> dict[str, Any]:
    """The normalised params of a genome (or genome dict, or sm90_cutlass param dict); raises
    InvalidGenome naming the broken rules if it cannot run the problem."""
    if isinstance(genome, Mapping):
        genome = Genome.from_dict(genome) if "params" in genome and "family" in genome else \
            Genome.make(_sm90.FAMILY, dict(genome))
    if genome.family not in SUPPORTED_FAMILIES:
        raise ValueError(f"the simulator models only {', '.join(SUPPORTED_FAMILIES)}, not {genome.family!r}")
    return _space_for(genome.family).validate(genome, problem).param_dict


@lru_cache(maxsize=4)
def _space_for(family: str):
    return get_space(family)


def _space():
    return _space_for(_sm90.FAMILY)


def simulate_breakdown(genome: "Genome | Mapping[str, Any]", problem: "Problem | str",
                       params: "SimParams | None" = None, device: "str | DeviceSpec" = "h200") -> SimBreakdown:
    """Every term of the model for one genome (or sm90_cutlass param dict) on one problem.
    Raises genome.InvalidGenome if the genome breaks a rule of its family for the problem."""
    problem = _as_problem(problem)
    return model(_checked_params(genome, problem), problem, params or SimParams(), get_device(device))


def simulate_time_us(genome: "Genome | Mapping[str, Any]", problem: "Problem | str",
                     params: "SimParams | None" = None, device: "str | DeviceSpec" = "h200") -> float:
    """Simulated device time (median, us, noise-free) of a genome on a problem."""
    return simulate_breakdown(genome, problem, params, device).total_us


# ---------------------------------------------------------------------------------------------
# vendor baselines
# ---------------------------------------------------------------------------------------------

def _cfg(schedule, tm, tn, tk=64, cm=1, cn=1, scheduler="persistent", decomposition="heuristic", splits=1,
         epilogue="tma", raster="heuristic", swizzle=1, stages=0) -> dict[str, Any]:
    return {"schedule": schedule, "tile_m": tm, "tile_n": tn, "tile_k": tk, "cluster_m": cm, "cluster_n": cn,
            "stages": stages, "epilogue": epilogue, "scheduler": scheduler, "raster": raster, "swizzle": swizzle,
            "splits": splits, "decomposition": decomposition, "reduction": "deterministic"}


def vendor_configs() -> list[dict[str, Any]]:
    """The fixed set of good configurations the simulated cuBLASLt autotuner chooses from."""
    base = [
        _cfg("cooperative", 128, 256, cm=2), _cfg("cooperative", 128, 256, cn=2), _cfg("cooperative", 128, 256),
        _cfg("cooperative", 256, 128, cn=2), _cfg("cooperative", 256, 128, cm=2), _cfg("cooperative", 128, 192, cm=2),
        _cfg("cooperative", 128, 128, cm=2), _cfg("cooperative", 128, 128),
        _cfg("pingpong", 128, 128, cm=2), _cfg("pingpong", 128, 128), _cfg("pingpong", 64, 256, cm=2),
        _cfg("pingpong", 64, 128), _cfg("pingpong", 64, 64), _cfg("pingpong", 64, 32),
        _cfg("cooperative", 128, 64, cm=2), _cfg("cooperative", 128, 64),
    ]
    streamk = [
        _cfg("cooperative", 128, 256, cm=2, scheduler="streamk"),
        _cfg("cooperative", 256, 128, cn=2, scheduler="streamk"),
        _cfg("cooperative", 128, 128, scheduler="streamk"),
        _cfg("cooperative", 128, 128, scheduler="streamk", decomposition="stream_k"),
        _cfg("cooperative", 128, 64, scheduler="streamk", decomposition="stream_k"),
        _cfg("cooperative", 128, 32, scheduler="streamk", decomposition="stream_k"),
    ]
    splitk = [_cfg("cooperative", 128, tn, scheduler="streamk", splits=s, decomposition="split_k")
              for tn in (32, 64, 128) for s in (2, 4, 8, 16)]
    out = []
    for cfg in base + streamk:
        for raster, swizzle in (("heuristic", 1), ("along_m", 8), ("along_n", 8)):
            out.append({**cfg, "raster": raster, "swizzle": swizzle})
    return out + splitk


def heuristic_configs() -> list[dict[str, Any]]:
    """The narrower set (default scheduler knobs) from which the simulated heuristic picks its top-1."""
    return [_cfg("cooperative", 128, 256, cm=2), _cfg("cooperative", 256, 128, cn=2), _cfg("pingpong", 128, 128),
            _cfg("pingpong", 64, 128), _cfg("pingpong", 64, 64),
            _cfg("cooperative", 128, 128, scheduler="streamk"),
            _cfg("cooperative", 128, 64, scheduler="streamk", splits=4, decomposition="split_k"),
            _cfg("cooperative", 128, 64, scheduler="streamk", splits=16, decomposition="split_k")]


def vendor_params(sp: SimParams) -> SimParams:
    """The model coefficients of vendor kernels: lower fixed costs, slightly faster mainloop."""
    return dataclasses.replace(
        sp, launch_us=sp.vendor_launch_us, prologue_us=sp.vendor_prologue_us,
        mma_clock_efficiency=sp.mma_clock_efficiency * sp.vendor_efficiency,
        load_latency_us=sp.load_latency_us * sp.vendor_latency_factor,
        miss_latency_us=sp.miss_latency_us * sp.vendor_latency_factor,
        streamk_workspace_us=sp.streamk_workspace_us * 0.5, cluster_launch_us=0.0, streamk_scheduler_us=0.0)


def _blind_params(sp: SimParams) -> SimParams:
    """What a heuristic (not a timer) sees: no L2 locality or latency effects."""
    return dataclasses.replace(sp, dram_interference=0.0, miss_latency_us=0.0, l2_usable_fraction=1.0)


def _valid_for(cfg: Mapping[str, Any], problem: Problem) -> bool:
    space = _space()
    g = Genome.make(_sm90.FAMILY, dict(cfg))
    return not space.violations(g, problem)


@lru_cache(maxsize=4096)
def _baseline_times(m: int, n: int, k: int, sp: SimParams, dev: DeviceSpec) -> dict[str, tuple[float, str]]:
    vp = vendor_params(sp)
    blind = _blind_params(vp)
    out: dict[str, tuple[float, str]] = {}

    def best(configs, problem, judge):
        chosen, chosen_t = None, math.inf
        for cfg in configs:
            if not _valid_for(cfg, problem):
                continue
            cfg = _space().normalise(Genome.make(_sm90.FAMILY, cfg)).param_dict
            t = model(cfg, problem, judge, dev).total_us
            if t < chosen_t:
                chosen, chosen_t = cfg, t
        return chosen

    tn_problem = Problem(m, n, k)
    nn_problem = Problem(n, m, k)  # C^T = W A^T: the same GEMM with M and N swapped
    results = {}
    for label, problem in (("tn", tn_problem), ("nn", nn_problem)):
        if problem.n % 8 or problem.k % 8:
            # vendors handle any alignment (slower paths); model the aligned-up problem, 10% slower
            padded = Problem(problem.m, _cdiv(problem.n, 8) * 8, _cdiv(problem.k, 8) * 8)
            penalty = 1.10
        else:
            padded, penalty = problem, 1.0
        heur = best(heuristic_configs(), padded, blind)
        tuned = best(vendor_configs(), padded, vp)
        results[label] = {
            "heuristic": (model(heur, padded, vp, dev).total_us * penalty, _short(heur)),
            "autotuned": (model(tuned, padded, vp, dev).total_us * penalty, _short(tuned)),
        }
    out["cublaslt_heuristic"] = results["tn"]["heuristic"]
    out["torch_tn"] = (results["tn"]["heuristic"][0] * (1 + sp.torch_overhead), results["tn"]["heuristic"][1])
    out["torch_nn"] = (results["nn"]["heuristic"][0] * (1 + sp.torch_overhead),
                       results["nn"]["heuristic"][1] + " (M,N swapped)")
    auto = min((results["tn"]["autotuned"], results["nn"]["autotuned"], results["tn"]["heuristic"],
                results["nn"]["heuristic"]), key=lambda r: r[0])
    out["cublaslt_autotuned"] = auto
    return out


def _short(cfg: Mapping[str, Any]) -> str:
    text = f"{cfg['schedule']} {cfg['tile_m']}x{cfg['tile_n']}x{cfg['tile_k']} cluster {cfg['cluster_m']}x{cfg['cluster_n']}"
    text += f" {cfg['scheduler']}"
    if cfg["scheduler"] == "streamk":
        text += f" {cfg['decomposition']}" + (f" splits={cfg['splits']}" if cfg["splits"] > 1 else "")
    if cfg["raster"] != "heuristic" or cfg["swizzle"] != 1:
        text += f" raster={cfg['raster']} swizzle={cfg['swizzle']}"
    return text


def _timing(median: float, sp: SimParams, repeats: int = 5) -> Timing:
    return Timing(median_us=median, min_us=median * (1 - sp.timing_spread / 3),
                  max_us=median * (1 + 2 * sp.timing_spread / 3), repeats=repeats)


def server_us(device_us: float, sp: SimParams) -> float:
    """One launch after an idle gap with L2 flushed: device time plus a cold-start penalty."""
    return device_us * (1 + sp.server_penalty_rel) + sp.server_penalty_us


def call_us(device_us: float, sp: SimParams) -> float:
    """Synchronised Python call: device time plus host overhead."""
    return device_us + sp.call_overhead_us


def simulate_baselines(problem: "Problem | str", params: "SimParams | None" = None,
                       device: "str | DeviceSpec" = "h200") -> BaselineSet:
    """Simulated vendor baselines (torch_tn, torch_nn, cublaslt_heuristic, cublaslt_autotuned)."""
    problem = _as_problem(problem)
    sp = params or resolve_calibration(None)[0]
    dev = get_device(device)
    times = _baseline_times(problem.m, problem.n, problem.k, sp, dev)
    out = BaselineSet(problem=problem.name, simulated=True)
    for name in BASELINE_NAMES:
        t, cfg = times[name]
        out.device[name] = _timing(t, sp)
        out.server[name] = _timing(server_us(t, sp), sp)
        out.call[name] = _timing(call_us(t, sp), sp)
        out.rel_error[name] = 2.0e-4
        out.notes[name] = f"simulated {dev.name} ({cfg})"
    return out


# ---------------------------------------------------------------------------------------------
# the evaluator
# ---------------------------------------------------------------------------------------------

def noise_factor(seed: int, genome_id: str, problem: str, noise: float) -> float:
    """Deterministic multiplicative noise exp(noise * z), z ~ N(0,1) drawn from a generator seeded
    by (seed, genome id, problem): independent of evaluation order and of global random state."""
    if noise <= 0:
        return 1.0
    return math.exp(noise * _rng(seed, genome_id, problem, "noise").gauss(0.0, 1.0))


def _rng(*parts: Any) -> random.Random:
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


class SimulatedEvaluator:
    """`evaluator.api.Evaluator` backed by the analytic model. Every result says simulated=True.

    calibration: a SimParams JSON file (or a name in evaluator/calibration/, or SimParams);
      default evaluator/calibration/h200.json if present, else the built-in defaults.
    device: "h200" or "h100" (the device facts; the coefficients come from the calibration).
    noise, seed: optional multiplicative timing noise exp(noise * z), reproducible per
      (seed, genome id, problem), so results do not depend on evaluation order.

    A genome that breaks a rule of its family for the problem comes back "invalid" with the rule
    names in `reason`; otherwise "ok" with device time = the model, server time = device + a
    cold-start penalty (idle gap, L2 flushed), call time = device + host overhead.
    """

    simulated = True
    OPTIONS = ("calibration", "device", "noise", "seed")  # constructor options (evaluator.factory filters by these)

    def __init__(self, calibration: "str | Path | SimParams | None" = None, device: str = "h200",
                 noise: float = 0.0, seed: int = 0):
        if noise < 0:
            raise ValueError("noise must be >= 0")
        self.params, self.calibration_name = resolve_calibration(calibration)
        self.device = get_device(device)
        self.noise = float(noise)
        self.seed = int(seed)

    def describe(self) -> str:
        extra = f", noise {self.noise:g} seed {self.seed}" if self.noise else ""
        return f"simulated {self.device.name} (analytic model, calibration {self.calibration_name}{extra})"

    def baselines(self, problem: Problem) -> BaselineSet:
        return simulate_baselines(problem, self.params, self.device)

    def predict_us(self, genome: Genome, problem: "Problem | str") -> float:
        """Noise-free model time of a valid genome."""
        return simulate_time_us(genome, problem, self.params, self.device)

    def evaluate(self, genomes: Sequence[Genome], problem: Problem) -> list[Measurement]:
        problem = _as_problem(problem)
        return [self._evaluate_one(g, problem) for g in genomes]

    def _evaluate_one(self, genome: Genome, problem: Problem) -> Measurement:
        name = problem.name
        if genome.family not in SUPPORTED_FAMILIES:
            return Measurement(genome.id, name, STATUS_UNSUPPORTED, simulated=True,
                               reason=f"the simulator has no model of family {genome.family!r} "
                                      f"(models: {', '.join(SUPPORTED_FAMILIES)})")
        space = _space_for(genome.family)
        found = space.violations(genome, problem)
        if found:
            return Measurement(genome.id, name, STATUS_INVALID, simulated=True,
                               reason="; ".join(str(v) for v in found))
        params = space.normalise(genome).param_dict
        regs = _sm90.acc_regs_per_thread(params)
        if regs > _sm90.MAX_ACC_REGS:
            return Measurement(genome.id, name, STATUS_REJECTED, simulated=True,
                               reason=f"[accumulator-registers] {regs} fp32 accumulator registers per thread "
                                      f"would spill (limit {_sm90.MAX_ACC_REGS})")
        t = model(params, problem, self.params, self.device).total_us
        t *= noise_factor(self.seed, genome.id, name, self.noise)
        spread = max(self.params.timing_spread, 2 * self.noise)
        rng = _rng(self.seed, genome.id, name, "spread")
        lo = t * (1 - spread * (0.2 + 0.3 * rng.random()))
        hi = t * (1 + spread * (0.3 + 0.5 * rng.random()))
        device_t = Timing(median_us=t, min_us=lo, max_us=hi, repeats=5)
        server_t = _timing(server_us(t, self.params), self.params)
        call_t = _timing(call_us(t, self.params), self.params)
        rel_error = 2.0e-4 * (1 + 0.05 * (rng.random() - 0.5)) * (1 + 0.02 * math.log2(max(1, problem.k) / 1024 + 1))
        reason = None
        if genome.patches:
            reason = f"simulated: {len(genome.patches)} code patch(es) not modelled (timed as the unpatched kernel)"
        return Measurement(genome.id, name, STATUS_OK, device=device_t, server=server_t, call=call_t,
                           rel_error=rel_error, reason=reason, simulated=True)

    def close(self) -> None:
        pass


# ---------------------------------------------------------------------------------------------
# calibration: rank correlation and fitting
# ---------------------------------------------------------------------------------------------

def _rankdata(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank."""
    a = np.asarray(a, dtype=float).ravel()
    sorter = np.argsort(a, kind="mergesort")
    inv = np.empty(a.size, dtype=np.intp)
    inv[sorter] = np.arange(a.size, dtype=np.intp)
    s = a[sorter]
    obs = np.r_[True, s[1:] != s[:-1]]
    dense = obs.cumsum()[inv]
    count = np.r_[np.nonzero(obs)[0], len(obs)]
    return 0.5 * (count[dense] + count[dense - 1] + 1)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (ties get average ranks); nan if either side is constant."""
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.size != y.size:
        raise ValueError(f"spearman: {x.size} vs {y.size} values")
    if x.size < 2:
        return float("nan")
    rx, ry = _rankdata(x), _rankdata(y)
    rx -= rx.mean()
    ry -= ry.mean()
    denom = math.sqrt(float((rx * rx).sum()) * float((ry * ry).sum()))
    if denom == 0:
        return float("nan")
    return float((rx * ry).sum() / denom)


@dataclass(frozen=True)
class _Record:
    params: dict
    problem: Problem
    time_us: float


def _parse_records(records: Iterable[Any]) -> tuple[list[_Record], int]:
    """(usable records, skipped count). A record is (genome, problem, time_us) or a dict with keys
    genome / problem / time_us; invalid genomes and non-positive times are skipped."""
    out, skipped = [], 0
    for rec in records:
        if isinstance(rec, Mapping):
            genome, problem, t = rec.get("genome"), rec.get("problem"), rec.get("time_us")
        else:
            genome, problem, t = rec
        try:
            g = genome if isinstance(genome, Genome) else (
                Genome.from_dict(genome) if "family" in genome else Genome.make(_sm90.FAMILY, genome))
            p = _as_problem(problem)
            t = float(t)
        except (TypeError, ValueError, KeyError):
            skipped += 1
            continue
        if g.family not in SUPPORTED_FAMILIES or not (t > 0 and math.isfinite(t)):
            skipped += 1
            continue
        space = _space_for(g.family)
        if space.violations(g, p):
            skipped += 1
            continue
        out.append(_Record(space.normalise(g).param_dict, p, t))
    return out, skipped


def _predict(records: Sequence[_Record], sp: SimParams, dev: DeviceSpec) -> np.ndarray:
    return np.array([model(r.params, r.problem, sp, dev).total_us for r in records])


def fit_calibration(records: Iterable[Any], start: "SimParams | None" = None,
                    fields: "Sequence[str] | None" = None, device: "str | DeviceSpec" = "h200",
                    max_evals: int = 3000, regularisation: float = 1e-3) -> SimParams:
    """Fit SimParams to measured device times by minimising the mean squared log error.

    records: (genome or genome dict, problem "MxNxK" or Problem, measured device time in us), or
    dicts {"genome", "problem", "time_us"}. Only `fields` (default: every FIT_BOUNDS field) move,
    in log space within their bounds, with a weak pull (`regularisation`) towards `start` so that
    coefficients the data does not constrain stay put. Uses scipy.optimize (Powell) when
    available, else a coordinate search.
    """
    start = start or SimParams()
    dev = get_device(device)
    recs, _ = _parse_records(records)
    if not recs:
        raise ValueError("fit_calibration: no usable records")
    names = list(fields) if fields else list(FIT_BOUNDS)
    for n in names:
        if n not in FIT_BOUNDS:
            raise ValueError(f"field {n!r} cannot be fitted; fittable: {', '.join(FIT_BOUNDS)}")
    base = start.to_dict()
    x0 = np.array([math.log(base[n]) for n in names])
    lo = np.array([math.log(FIT_BOUNDS[n][0]) for n in names])
    hi = np.array([math.log(FIT_BOUNDS[n][1]) for n in names])
    x0 = np.clip(x0, lo, hi)
    log_meas = np.log([r.time_us for r in recs])

    def make(x: np.ndarray) -> SimParams:
        values = dict(base)
        values.update({n: float(math.exp(v)) for n, v in zip(names, np.clip(x, lo, hi))})
        return SimParams(**values)

    def loss(x: np.ndarray) -> float:
        pred = _predict(recs, make(x), dev)
        err = np.log(pred) - log_meas
        return float(np.mean(err * err) + regularisation * np.mean((x - x0) ** 2))

    best_x, best_f = x0.copy(), loss(x0)
    try:
        from scipy.optimize import minimize  # dev dependency; optional
    except ImportError:  # pragma: no cover - exercised only without scipy
        minimize = None
    if minimize is not None:
        res = minimize(loss, x0, method="Powell", bounds=list(zip(lo, hi)),
                       options={"maxfev": max_evals, "xtol": 1e-3, "ftol": 1e-7})
        if res.fun < best_f:
            best_x, best_f = np.clip(res.x, lo, hi), float(res.fun)
    else:
        best_x, best_f = _coordinate_search(loss, x0, lo, hi, max_evals)
    return make(best_x)


def _coordinate_search(loss, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray, max_evals: int) -> tuple[np.ndarray, float]:
    """Fallback optimiser: try steps up and down each coordinate, halve the step when stuck."""
    x, f = x0.copy(), loss(x0)
    evals, step = 1, 0.5
    while evals < max_evals and step > 1e-3:
        improved = False
        for i in range(x.size):
            for sign in (1.0, -1.0):
                y = x.copy()
                y[i] = min(hi[i], max(lo[i], y[i] + sign * step))
                if y[i] == x[i]:
                    continue
                fy = loss(y)
                evals += 1
                if fy < f:
                    x, f, improved = y, fy, True
                    break
            if evals >= max_evals:
                break
        if not improved:
            step /= 2
    return x, f


def _fit_report(recs: Sequence[_Record], sp: SimParams, dev: DeviceSpec) -> tuple[float, float]:
    pred = _predict(recs, sp, dev)
    meas = np.array([r.time_us for r in recs])
    return spearman(pred, meas), float(np.mean(np.abs(np.log(pred) - np.log(meas))))


def rank_report(records: Iterable[Any], params: "SimParams | None" = None, device: str = "h200") -> dict[str, Any]:
    """How well the model ranks measured kernels: Spearman over all (genome, shape) pairs, the mean
    and worst Spearman within each shape (what a search relies on), the mean absolute log error,
    and on how many shapes the model's favourite kernel is within 3% of the measured best."""
    recs, skipped = _parse_records(records)
    if not recs:
        raise ValueError("no usable records")
    dev = get_device(device)
    pred = _predict(recs, params or SimParams(), dev)
    meas = np.array([r.time_us for r in recs])
    by_shape: dict[str, list[int]] = {}
    for i, r in enumerate(recs):
        by_shape.setdefault(r.problem.name, []).append(i)
    per_shape = {name: spearman(pred[idx], meas[idx]) for name, idx in by_shape.items() if len(idx) > 2}
    hits = sum(1 for idx in by_shape.values()
               if meas[idx][int(np.argmin(pred[idx]))] <= 1.03 * float(np.min(meas[idx])))
    values = list(per_shape.values())
    return {"pairs": len(recs), "skipped": skipped, "shapes": len(by_shape),
            "spearman_pooled": spearman(pred, meas),
            "spearman_within_shape_mean": float(np.mean(values)) if values else float("nan"),
            "spearman_within_shape_min": float(np.min(values)) if values else float("nan"),
            "mean_abs_log_error": float(np.mean(np.abs(np.log(pred) - np.log(meas)))),
            "best_pick_within_3pct": f"{hits}/{len(by_shape)}"}


def _load_records(path: "str | Path", groups: "Sequence[str] | None" = None) -> list:
    data = json.loads(Path(path).read_text())
    if isinstance(data, Mapping) and "records" in data:
        data = data["records"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of {{genome, problem, time_us}} records")
    if groups:
        data = [r for r in data if isinstance(r, Mapping) and r.get("group") in set(groups)]
    return data


def calibrate_file(measurements_json: "str | Path", out_json: "str | Path",
                   start: "SimParams | str | Path | None" = None, device: str = "h200",
                   fields: "Sequence[str] | None" = None, max_evals: int = 3000,
                   groups: "Sequence[str] | None" = None) -> dict[str, Any]:
    """Fit SimParams to a JSON list of {"genome", "problem", "time_us"} records; write the
    calibration JSON (format at the top of this module) and return the report (also its meta)."""
    src = Path(measurements_json)
    data = _load_records(src, groups)
    start_params = start if isinstance(start, SimParams) else resolve_calibration(start)[0]
    dev = get_device(device)
    recs, skipped = _parse_records(data)
    if not recs:
        raise ValueError(f"{src}: no usable records ({skipped} skipped)")
    rho0, mle0 = _fit_report(recs, start_params, dev)
    fitted = fit_calibration([(r.params, r.problem, r.time_us) for r in recs], start_params, fields=fields,
                             device=dev, max_evals=max_evals)
    rho1, mle1 = _fit_report(recs, fitted, dev)
    report = {
        "source": str(src),
        "groups": list(groups) if groups else "all",
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": dev.name.lower(),
        "records": len(recs),
        "skipped": skipped,
        "fitted": list(fields) if fields else list(FIT_BOUNDS),
        "spearman_before": rho0,
        "spearman_after": rho1,
        "mean_abs_log_error_before": mle0,
        "mean_abs_log_error_after": mle1,
    }
    save_calibration(fitted, out_json, report, device=dev.name.lower())
    report["out"] = str(out_json)
    return report


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def main(argv: "Sequence[str] | None" = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m evaluator.simulator", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate", help="fit SimParams to measured device times")
    c.add_argument("measurements")
    c.add_argument("out")
    c.add_argument("--start", default=None, help="starting calibration (default: evaluator/calibration/h200.json)")
    c.add_argument("--device", default="h200")
    c.add_argument("--max-evals", type=int, default=3000)
    c.add_argument("--groups", default=None, help="fit only on records of these groups (comma-separated)")
    k = sub.add_parser("check", help="rank agreement of the model with measured device times")
    k.add_argument("measurements")
    k.add_argument("--calibration", default=None)
    k.add_argument("--groups", default=None, help="only records of these groups (comma-separated)")
    k.add_argument("--device", default="h200")
    p = sub.add_parser("predict", help="simulated device time of a genome JSON on a shape")
    p.add_argument("genome")
    p.add_argument("shape")
    p.add_argument("--calibration", default=None)
    p.add_argument("--device", default="h200")
    b = sub.add_parser("baselines", help="simulated vendor baselines of a shape")
    b.add_argument("shape")
    b.add_argument("--calibration", default=None)
    b.add_argument("--device", default="h200")
    args = ap.parse_args(argv)
    if args.cmd == "calibrate":
        report = calibrate_file(args.measurements, args.out, start=args.start, device=args.device,
                                max_evals=args.max_evals, groups=args.groups.split(",") if args.groups else None)
        print(json.dumps(report, indent=2))
    elif args.cmd == "check":
        sp = resolve_calibration(args.calibration)[0]
        records = _load_records(args.measurements, args.groups.split(",") if args.groups else None)
        print(json.dumps({"simulated": True, "calibration": args.calibration or "default",
                          **rank_report(records, sp, args.device)}, indent=2))
    elif args.cmd == "predict":
        sp = resolve_calibration(args.calibration)[0]
        bd = simulate_breakdown(Genome.load(args.genome), args.shape, sp, args.device)
        print(json.dumps({"simulated": True, **bd.to_dict()}, indent=2))
    else:
        sp = resolve_calibration(args.calibration)[0]
        print(json.dumps(simulate_baselines(args.shape, sp, args.device).to_dict(), indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
