"""What every simulator model shares: device facts, the model coefficients (`SimParams`) and their
calibration files, the breakdown a model returns, and how a device time becomes the other timing
modes (server, call). Nothing here knows a template family.

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
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .api import Timing

FORMAT_TAG = "evogemm-simparams"
FORMAT_VERSION = 1
CALIBRATION_DIR = Path(__file__).resolve().parent / "calibration"
DEFAULT_CALIBRATION = CALIBRATION_DIR / "h200.json"

_MIB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# device facts and model coefficients
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceSpec:
    """Facts of the device (not fitted). `gpc_sms` decides which cluster sizes fill all SMs: a layout
    that reproduces the clusters of 1, 2, 4, 8 and 16 CTAs a GPU was measured to run at once (under the
    rule that a cluster stays in one GPC), not necessarily its physical partition."""

    name: str
    n_sms: int
    gpc_sms: tuple[int, ...]
    peak_tflops: float        # dense fp16 tensor peak, datasheet
    clock_ghz: float          # the clock the datasheet peak assumes (4096 flop/clk/SM)
    hbm_tbps: float           # measured copy bandwidth
    l2_bytes: int
    smem_per_block: int       # opt-in maximum shared memory per block
    # which revision of the family models prices kernels on it (evolution.campaign_spaces.SEED_MODEL_REVISION):
    # a campaign created before a model changed orders its seeds as it did then, so that its resume replays
    model_revision: int = 6

    @property
    def clk_per_us(self) -> float:
        return self.clock_ghz * 1e3


# SMs per GPC: a layout that gives the clusters of 1, 2, 4, 8 and 16 CTAs a lent H200 runs at once (one CTA
# per SM, cudaOccupancyMaxActiveClusters, confirmed by a timed wave of n and n + 1 clusters): 132, 66, 30,
# 15, 7 (docs/results/h200-cluster-capacity). It does not reproduce the odd sizes 3 and 6 (43 and 21
# against 39 and 17 measured; no space uses them), nor the counts with two CTAs an SM. The old guess
# (18, 18, 16 x 6) allowed 32 of 4 and 16 of 8, so it priced a 128-CTA grid of 4-CTA clusters as one
# wave; it runs as two. (10, 16, 16, 18 x 5) gives the same counts. Which TPCs are fused off varies from
# chip to chip. The H100 SXM (the same 132-SM configuration of GH100) is given the same layout: assumed,
# not measured here (public reports of H100 runs also show 120 CTAs in clusters of 8).
_GH100_132_GPC_SMS = (18, 18, 18, 18, 18, 18, 16, 8)
# the layout before that measurement: campaigns created before it order and fit their seeds with it, so
# that their resume replays (evolution/campaign_spaces.py, seed_model_device)
LEGACY_GPC_SMS = (18, 18, 16, 16, 16, 16, 16, 16)
DEVICES: dict[str, DeviceSpec] = {
    "h200": DeviceSpec("H200", 132, _GH100_132_GPC_SMS, 989.4, 1.83, 4.3, 60 * _MIB, 227 * 1024),
    "h100": DeviceSpec("H100", 132, _GH100_132_GPC_SMS, 989.4, 1.83, 3.35, 50 * _MIB, 227 * 1024),
}


def cdiv(a: int, b: int) -> int:
    """Ceiling division, for the models' tile, block and wave counts."""
    return -(-a // b)


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
    """Every coefficient of the models. Times in microseconds unless the name says clk/bytes.

    `evaluator.sim_fit.FIT_BOUNDS` lists the fields `fit_calibration` adjusts and their ranges.
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
    # rows of A and W (2K bytes) that are not whole 128-byte lines: each TMA row segment straddles
    # more L2 sectors and lines; multiplies the L2 -> SM operand traffic (docs/results/h200-k-pitch:
    # K = 1000 costs unclustered 64x128 tiles ~60%, a cluster of 4 along N 7%, K = 1040 ~20%)
    pitch64_l2_factor: float = 1.15        # rows 64-byte aligned
    pitch32_l2_factor: float = 1.3         # rows 32-byte aligned
    pitch16_l2_factor: float = 1.85        # rows 16-byte aligned only
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
    timing_spread: float = 0.01            # unused: the simulator reports no spread (kept so that
                                           # version-1 calibration files still load)

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


# ---------------------------------------------------------------------------------------------
# what a model returns
# ---------------------------------------------------------------------------------------------

@dataclass
class SimBreakdown:
    """A model's terms for one (genome, problem), in microseconds (plus a few facts).

    A family's simulator model, `model(params, problem, sim_params, device) -> SimBreakdown`,
    fills what applies to its kernels; `total_us` is the simulated device time."""

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
    mode: str                       # e.g. data_parallel | stream_k | hybrid | split_k
    dram_bytes: float
    l2_bytes: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------
# derived timing modes
# ---------------------------------------------------------------------------------------------

def server_us(device_us: float, sp: SimParams) -> float:
    """One launch after an idle gap with L2 flushed: device time plus a cold-start penalty."""
    return device_us * (1 + sp.server_penalty_rel) + sp.server_penalty_us


def call_us(device_us: float, sp: SimParams) -> float:
    """Synchronised Python call: device time plus host overhead."""
    return device_us + sp.call_overhead_us


def simulated_timing(median_us: float) -> Timing:
    """A model figure as a Timing: nothing was repeated, so no spread (min/max None, repeats 0)."""
    return Timing(median_us=median_us, min_us=None, max_us=None, repeats=0)


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
