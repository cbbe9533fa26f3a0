"""The search space of the `sm90_lean` family: sm90_cutlass's tiles with the plain warp-specialised
schedule (KernelTmaWarpSpecialized: one consumer warpgroup, one CTA per tile, not persistent).

The parameters and rules are sm90_cutlass's, with the schedule fixed to "ws" and the scheduler
knobs fixed to what a non-persistent kernel uses (no stream-K, no split); the accumulator rule
counts one consumer warpgroup of 128 threads.
"""

from __future__ import annotations

import random
from dataclasses import replace

from . import sm90_cutlass_space as _sm90
from .space import ParamSpec, Params, Rule, SearchSpace

FAMILY = "sm90_lean"
FIXED = {"schedule": ("ws",), "scheduler": ("persistent",), "splits": (1,), "decomposition": ("heuristic",),
         "reduction": ("deterministic",), "cluster_grid": ("cutlass",)}
knobs = _sm90.knobs

# sm90_lean's schedule as a third choice beside sm90_cutlass's two, for families that offer all three
# (sm90_padded, sm90_swapab); their templates render it with sm90_lean/ws_tile_config.j2
WS_SCHEDULE = ParamSpec("schedule", ("cooperative", "pingpong", "ws"), ordered=False,
                        doc="warp-specialised kernel schedule; ws: sm90_lean's (one consumer warpgroup, one "
                            "CTA per tile, not persistent) for small problems")


def _ws_persistent(p):
    if p["schedule"] == "ws" and p["scheduler"] != "persistent":
        return "the ws schedule is not persistent: it takes no stream-K scheduler (one CTA per tile)"
    return None


def _fix_ws_persistent(p: Params, rng: random.Random) -> Params:
    p["scheduler"] = "persistent"
    return p


WS_PERSISTENT = Rule("ws-persistent", "the ws schedule uses the persistent (one CTA per tile) scheduler",
                     _ws_persistent, _fix_ws_persistent)


def make_space() -> SearchSpace:
    base = _sm90.make_space(warpgroup_split=False)
    params = _sm90.derived_params(base.params, fixed=FIXED)
    rules = tuple(r for r in base.rules if r.name not in ("cooperative-tile-m", "pingpong-streamk",
                                                           "splits-need-streamk"))
    return replace(base, family=FAMILY, params=params, rules=rules,
                   description="sm90_cutlass tiles with the plain warp-specialised schedule: one consumer "
                               "warpgroup, one CTA per tile, not persistent (tiny problems)")
