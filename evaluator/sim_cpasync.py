"""The simulator model of the `sm90_cpasync` family: the sm90_cutlass model of the same tile
(sm90_lean's for the one-CTA-per-tile "ws" schedule), with a cp.async loader in place of TMA.

Fitted to one H200 bench (docs/results/h200-cpasync: 13 cp.async kernels at 12 shapes): the
same tiles ran 1.3-2.5x slower than with TMA, at every shape, and K = 1000 still cost them 38%
(TMA: 59%), so the pitch penalty is one of unaligned row starts in the memory system, not of TMA
alone. The model: the TMA model's time x 1.3, a pitch factor of 1.6 for rows that are not whole
128-byte lines, and slower ingress for narrower loads (`ab_align` 4 and 2)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_lean import model as lean_model
from .sim_sm90 import model as sm90_model

SECTOR_FACTOR = 1.6         # rows that are not whole 128-byte lines (TMA: 1.15-1.85)
INGRESS_SLOWDOWN = {8: 1.1, 4: 1.35, 2: 1.9}   # thread-issued loads of 16, 8 and 4 bytes
SLOWDOWN = 1.3              # measured / modelled time of the same model with TMA's factors


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    slow = INGRESS_SLOWDOWN[int(params.get("ab_align", 8))]
    # row_pitch_factor applies these only to rows that are not whole 128-byte lines
    cp = replace(sp, pitch64_l2_factor=SECTOR_FACTOR, pitch32_l2_factor=SECTOR_FACTOR, pitch16_l2_factor=SECTOR_FACTOR,
                 sm_ingress_bytes_per_clk=sp.sm_ingress_bytes_per_clk / slow)
    as_sm90 = dict(params, cluster_m=1, cluster_n=1)
    inner = (lean_model if params.get("schedule") == "ws" else sm90_model)(as_sm90, problem, cp, dev)
    return replace(inner, total_us=inner.total_us * SLOWDOWN)
