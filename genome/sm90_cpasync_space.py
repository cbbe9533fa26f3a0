"""The search space of the `sm90_cpasync` family: sm90_cutlass's WGMMA tiles fed by cp.async
instead of TMA (CUTLASS's KernelCpAsyncWarpSpecialized* schedules).

TMA reads A and W rows slowly when their pitch is not a whole number of 128-byte lines (K = 1000:
56-61% slower at 1024x1024x1000, docs/results/h200-k-pitch), and needs 16-byte rows. cp.async
loads need only `ab_align` elements of alignment (8, 4 or 2: 16, 8 or 4-byte loads), so this
family takes any even K with no copy, and, with `c_align` < 8 (direct stores from registers),
any N. There is no cluster (no multicast without TMA) and no stream-K: one CTA per tile ("ws", two
producer warpgroups) or the persistent ping-pong / cooperative schedules.

Measured on the H200 (docs/results/h200-cpasync): 1.3-2.5x slower than the same tiles with TMA at
every shape, and K = 1000 still costs it 38% (TMA: 59%). Kept for what only it does (an even K that
is not a multiple of 8 without a copy); the public campaign leaves it out.
"""

from __future__ import annotations

from dataclasses import replace

from . import sm90_cutlass_space as _sm90
from .problem import Problem
from .space import ParamSpec, Rule, SearchSpace, ShapeRule
from .sm90_padded_space import C_ALIGN, _c_alignment, _direct_needs_nosmem, _fix_direct

FAMILY = "sm90_cpasync"
FIXED = {"cluster_m": (1,), "cluster_n": (1,), "scheduler": ("persistent",), "splits": (1,),
         "decomposition": ("heuristic",), "reduction": ("deterministic",), "cluster_grid": ("cutlass",)}
SCHEDULE = ParamSpec("schedule", ("ws", "pingpong", "cooperative"), ordered=False,
                     doc="ws: one CTA per tile, two producer warpgroups, one consumer (not persistent); "
                         "pingpong / cooperative: persistent, one producer warpgroup, two consumers")
AB_ALIGN = ParamSpec("ab_align", (8, 4, 2),
                     doc="elements per cp.async load of A and W (16, 8 or 4 bytes); K must be a multiple")
# No register reallocation between producer and consumer warpgroups (the TMA kernels' setmaxnreg):
# each of the 384 threads gets 65536 / 384 = 168 registers. Built on sm_90a with nvcc 13.0: the
# persistent schedules hold 64 fp32 accumulators per consumer thread (ping-pong 64x128: 160
# registers; cooperative 128x128: 164) but spill with more (cooperative 128x192, 96 per thread),
# and ping-pong 128x64 already spills 16 bytes (the compiler rejects it); "ws" keeps no scheduler
# state (64 accumulators: 92 registers) and holds up to 128.
MAX_ACC_REGS = {"ws": 128, "pingpong": 64, "cooperative": 64}
knobs = _sm90.knobs


def _acc_registers(p):
    regs, limit = _sm90.acc_regs_per_thread(p), MAX_ACC_REGS[p["schedule"]]
    if regs > limit:
        return (f"a {p['tile_m']}x{p['tile_n']} tile needs {regs} fp32 accumulator registers per consumer "
                f"thread with the {p['schedule']} schedule; cp.async kernels share 168 registers per thread "
                f"with their producers (limit {limit})")
    return None


def _k_alignment(p, problem: Problem):
    if problem.k % p["ab_align"]:
        return (f"K={problem.k} is not a multiple of ab_align={p['ab_align']} (the cp.async width of A and W "
                "rows); an odd K needs sm90_padded's copy")
    return None


def make_space() -> SearchSpace:
    base = _sm90.make_space(warpgroup_split=False)
    params = _sm90.derived_params(base.params, fixed={**FIXED, **_sm90.AUTO_EPILOGUE_TILE}, replaced=(SCHEDULE,))
    rules = tuple(r for r in base.rules if r.name not in ("pingpong-streamk", "splits-need-streamk",
                                                           "multicast-slice", "cluster-size",
                                                           "accumulator-registers"))
    return replace(
        base, family=FAMILY, params=(*params, AB_ALIGN, C_ALIGN),
        rules=(*rules, Rule("accumulator-registers", "tile M x tile N / consumer threads <= 128 fp32 registers "
                            "(ws), 64 (persistent)", _acc_registers, _sm90._fix_acc_registers),
               Rule("direct-c-nosmem", "c_align < 8 only with the nosmem epilogue",
                            _direct_needs_nosmem, _fix_direct)),
        shape_rules=(ShapeRule("cp-async-alignment", "K a multiple of ab_align", _k_alignment),
                     ShapeRule("c-alignment", "N a multiple of c_align", _c_alignment)),
        description="sm90_cutlass tiles fed by cp.async instead of TMA: any row pitch, even K, any N with "
                    "direct C stores; no clusters")
