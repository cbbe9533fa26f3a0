"""The search space of the `sm90_lean` family: sm90_cutlass's tiles with the plain warp-specialised
schedule (KernelTmaWarpSpecialized: one consumer warpgroup, one CTA per tile, not persistent).

The parameters and rules are sm90_cutlass's, with the schedule fixed to "ws" and the scheduler
knobs fixed to what a non-persistent kernel uses (no stream-K, no split); the accumulator rule
counts one consumer warpgroup of 128 threads.
"""

from __future__ import annotations

from dataclasses import replace

from . import sm90_cutlass_space as _sm90
from .space import SearchSpace

FAMILY = "sm90_lean"
FIXED = {"schedule": ("ws",), "scheduler": ("persistent",), "splits": (1,), "decomposition": ("heuristic",),
         "reduction": ("deterministic",)}
knobs = _sm90.knobs


def make_space() -> SearchSpace:
    base = _sm90.make_space()
    params = _sm90.derived_params(base.params, fixed=FIXED)
    rules = tuple(r for r in base.rules if r.name not in ("cooperative-tile-m", "pingpong-streamk",
                                                           "splits-need-streamk"))
    return replace(base, family=FAMILY, params=params, rules=rules,
                   description="sm90_cutlass tiles with the plain warp-specialised schedule: one consumer "
                               "warpgroup, one CTA per tile, not persistent (tiny problems)")
