"""The simulator model of the `sm90_cpasync` family: the sm90_cutlass model of the same tile
(sm90_lean's for the one-CTA-per-tile "ws" schedule), with a cp.async loader in place of TMA.

Not calibrated on a device yet: the factors are estimates. cp.async pays for an unaligned row
pitch only in L2 sectors (a 128-byte row segment that starts mid-line touches 5 sectors, not 4),
not the TMA's 1.15-1.85x, but its loads are issued by a warpgroup of threads: the ingress is
taken 10% slower, and more so for narrower loads (`ab_align` 4 and 2)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_lean import model as lean_model
from .sim_sm90 import model as sm90_model

SECTOR_FACTOR = 1.25        # 5 sectors for 4 when a 128-byte row segment is not line-aligned
INGRESS_SLOWDOWN = {8: 1.1, 4: 1.35, 2: 1.9}   # thread-issued loads of 16, 8 and 4 bytes


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    slow = INGRESS_SLOWDOWN[int(params.get("ab_align", 8))]
    pitch = SECTOR_FACTOR if (2 * problem.k) % 128 else 1.0
    cp = replace(sp, pitch64_l2_factor=pitch, pitch32_l2_factor=pitch, pitch16_l2_factor=pitch,
                 sm_ingress_bytes_per_clk=sp.sm_ingress_bytes_per_clk / slow)
    as_sm90 = dict(params, cluster_m=1, cluster_n=1)
    if params.get("schedule") == "ws":
        return lean_model(as_sm90, problem, cp, dev)
    return sm90_model(as_sm90, problem, cp, dev)
