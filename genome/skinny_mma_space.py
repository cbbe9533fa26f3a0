"""The search space of the `skinny_mma` family: a streaming mma.sync kernel for skinny GEMMs.

One operand (the one with more rows, "X") is streamed from HBM once with 16-byte loads straight
into mma.sync m16n8k16 fragments (any K: rows that start off a 16-byte boundary are shifted out of
aligned loads); the other ("Y", at most `MAX_SMALL_DIM` rows) stays in L2. K is
split over the warps of a CTA and over the CTAs of a thread-block cluster (runtime knob), and the
partial sums meet in shared and distributed shared memory. Rules keep the register file, shared
memory and the thread count of a CTA within what an sm_90 SM gives one block.
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from .problem import Problem
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "skinny_mma"

MAX_SMALL_DIM = 256            # min(M, N) above this is not a skinny problem
SMEM_BYTES_PER_BLOCK = 232448  # 227 KB opt-in
REGS_PER_SM = 65536
MAX_REGS_PER_THREAD = 255
REG_OVERHEAD = 40              # addresses, indices, loop state

PARAMS = (
    ParamSpec("warp_rows", (16, 32, 64), doc="rows of the streamed operand per warp (m16 tiles of 16)"),
    ParamSpec("warps_r", (1, 2, 4), doc="warps of a CTA side by side along the streamed rows"),
    ParamSpec("warps_k", (1, 2, 4, 8), doc="warps of a CTA splitting K"),
    ParamSpec("s_tile", (8, 16, 32, 64), doc="rows of the small operand per CTA (n8 tiles of 8)"),
    ParamSpec("unroll", (1, 2, 4, 8), doc="32-wide k chunks loaded before they are used (bytes in flight)"),
    ParamSpec("prefetch", (0, 1), doc="1: load the next group of chunks while this one is multiplied "
                                     "(register double buffering)"),
    ParamSpec("cluster_k", (1, 2, 4, 8, 16), kind="runtime",
              doc="CTAs of a thread-block cluster splitting K, reduced over distributed shared memory"),
    ParamSpec("k_interleave", (0, 1), implicit=True, revision=3,
              doc="1: the K splits (warps and cluster CTAs) take groups of 32 x unroll k in turn, so that a cluster "
                  "reads long runs of each row at once; 0: each split a contiguous K range"),
    ParamSpec("l2_prefetch", (256, 128), implicit=True, revision=3,
              doc="bytes the L2 fetches around each streamed load of X (the .L2::<n>B hint)"),
)

BLOCKS = ("includes", "config", "loads", "mma", "kernel", "launch", "abi")


def registers(p: Mapping[str, Any]) -> int:
    """Estimated registers per thread: loaded X and Y vectors of `unroll` chunks + accumulators."""
    mt, nt = p["warp_rows"] // 16, p["s_tile"] // 8
    buffers = 2 if p["prefetch"] else 1
    return buffers * p["unroll"] * (8 * mt + 4 * nt) + 4 * mt * nt + REG_OVERHEAD


def threads(p: Mapping[str, Any]) -> int:
    return 32 * p["warps_r"] * p["warps_k"]


def smem_bytes(p: Mapping[str, Any]) -> int:
    """The partial-sum tiles of the warps splitting K and, with a cluster, one tile more: the partial sums the
    cluster's peers send a CTA."""
    tiles = p["warps_k"] + (1 if int(p.get("cluster_k", 1)) > 1 else 0)
    return 4 * p["warps_r"] * p["warp_rows"] * p["s_tile"] * tiles


def _registers(p):
    if registers(p) > MAX_REGS_PER_THREAD:
        return (f"about {registers(p)} registers per thread (unroll {p['unroll']} x {p['warp_rows']} rows x "
                f"{p['s_tile']} columns) exceed {MAX_REGS_PER_THREAD}")
    if registers(p) * threads(p) > REGS_PER_SM:
        return f"{threads(p)} threads x about {registers(p)} registers exceed the {REGS_PER_SM} registers of an SM"
    return None


def _fix_registers(p: Params, rng: random.Random) -> Params:
    if p["prefetch"] and rng.random() < 0.5:
        p["prefetch"] = 0
    elif p["unroll"] > 1:
        p["unroll"] //= 2
    elif p["s_tile"] > 8:
        p["s_tile"] //= 2
    elif p["warp_rows"] > 16:
        p["warp_rows"] //= 2
    else:
        p["warps_k"] = max(1, p["warps_k"] // 2)
    return p


def _smem(p):
    if smem_bytes(p) > SMEM_BYTES_PER_BLOCK:
        return f"the partial-sum tile needs {smem_bytes(p) // 1024} KB of shared memory (> 227 KB)"
    return None


def _fix_smem(p: Params, rng: random.Random) -> Params:
    if p["warps_k"] > 1:
        p["warps_k"] //= 2
    elif p["s_tile"] > 8:
        p["s_tile"] //= 2
    else:
        p["warp_rows"] = max(16, p["warp_rows"] // 2)
    return p


def _threads(p):
    if threads(p) > 512:
        return f"{threads(p)} threads per CTA; at most 512 (16 warps)"
    return None


def _fix_threads(p: Params, rng: random.Random) -> Params:
    if p["warps_k"] >= p["warps_r"]:
        p["warps_k"] //= 2
    else:
        p["warps_r"] //= 2
    return p


RULES = (
    Rule("registers", "unroll x (8 x m16 tiles + 4 x n8 tiles) + accumulators within 255 registers and the SM's file",
         _registers, _fix_registers),
    Rule("smem-capacity", "warps_k partial tiles of fp32 (one more with a cluster) fit in 227 KB of shared memory", _smem, _fix_smem),
    Rule("threads", "at most 16 warps per CTA", _threads, _fix_threads),
)


# any K (K % 8 != 0): the second kernel keeps one aligned chunk more a row per group, and the group's shifted
# fragments besides (counted whole: the compiler may shift every chunk before the first mma). It is built with the
# first of these whose estimate fits ANY_K_MAX_REGISTERS and the SM's register file at the CTA's threads: the
# genome's own unroll and double buffering, then single buffering, then halving unroll. The estimate is not an upper
# bound (ptxas 13.0 used 251-254 registers where it says 228, with no spill), and a spill in either kernel rejects
# the whole build (evaluator/compile.py): with nvcc 13.0, 24 seeds and 100 random genomes, the heaviest first, spilled
# in neither kernel where the aligned one did not (tests/test_skinny_any_k.py builds the heaviest plans).
ANY_K_MAX_REGISTERS = 232
ANY_K_TEMPORARIES = 16


def any_k_registers(warp_rows: int, s_tile: int, unroll: int, buffers: int) -> int:
    """Estimated registers per thread of the any-K kernel with `unroll` chunks a group, `buffers` groups."""
    mt, nt = warp_rows // 16, s_tile // 8
    chunk = 8 * mt + 4 * nt
    return buffers * (unroll + 1) * chunk + unroll * chunk + 4 * mt * nt + REG_OVERHEAD + ANY_K_TEMPORARIES


def any_k_plan(warp_rows: int, s_tile: int, unroll: int, prefetch: int, warps_r: int, warps_k: int
               ) -> "tuple[int, int] | None":
    """(unroll, prefetch) of the any-K kernel, or None where none fits the registers (the family then runs
    only K a multiple of 8). Read by the template (kernel.cu.j2: block config, and the any-K kernel outside every
    block), the shape rule and the simulator."""
    cap = min(ANY_K_MAX_REGISTERS, REGS_PER_SM // (32 * warps_r * warps_k))
    plans = ([(unroll, 1)] if prefetch else []) + [(u, 0) for u in (unroll, unroll // 2, unroll // 4, unroll // 8) if u]
    for u, pf in plans:
        if any_k_registers(warp_rows, s_tile, u, 2 if pf else 1) <= cap:
            return u, pf
    return None


def any_k_plan_of(p: Mapping[str, Any]) -> "tuple[int, int] | None":
    return any_k_plan(p["warp_rows"], p["s_tile"], p["unroll"], p["prefetch"], p["warps_r"], p["warps_k"])


def _skinny(p, problem: Problem):
    small = min(problem.m, problem.n)
    if small > MAX_SMALL_DIM:
        return f"skinny_mma is for min(M, N) <= {MAX_SMALL_DIM}; this problem has min(M, N) = {small}"
    return None


def _k_aligned(p, problem: Problem):
    if problem.k % 8:
        return f"skinny_mma loads 16-byte rows of A and W, so K must be a multiple of 8; K = {problem.k}"
    return None


def _any_k(p, problem: Problem):
    if problem.k % 8 and any_k_plan_of(p) is None:
        return (f"K = {problem.k} is not a multiple of 8, and this kernel's shifted loads for such K do not fit the "
                f"registers ({p['warp_rows']} rows x {p['s_tile']} columns a warp, even at unroll 1)")
    return None


# K: until space revision 7 a multiple of 8 (16-byte rows of A and W); since, any K (the kernel's shifted loads,
# kernel.cu.j2), so a campaign created before keeps the odd-K shapes it left out
K_ALIGNMENT = ShapeRule("k-alignment", "any K (rows of A and W off 16-byte boundaries take shifted 16-byte loads, "
                        "where they fit the registers: any_k_plan); N and M may be anything", _any_k, since=7,
                        before=ShapeRule("k-alignment", "K multiple of 8 (16-byte rows of A and W; N and M may be "
                                         "anything)", _k_aligned))

SHAPE_RULES = (
    ShapeRule("skinny", f"min(M, N) <= {MAX_SMALL_DIM}", _skinny),
    K_ALIGNMENT,
)


def knobs(params: Mapping[str, Any]) -> list[int]:
    """The runtime knob vector passed through the C ABI (see kernel.cu.j2, block `abi`)."""
    return [int(params["cluster_k"])]


def make_space() -> SearchSpace:
    return SearchSpace(
        family=FAMILY,
        params=PARAMS,
        rules=RULES,
        shape_rules=SHAPE_RULES,
        blocks=BLOCKS,
        # no shape knobs: the model's pick of cluster_k was the measured best in 133 of 208 H200 cases, and up
        # to 22x slower (cluster_k 8-16 on shapes with many row blocks); seeds keep their measured cluster_k
        description="streaming mma.sync kernel for skinny GEMMs (min(M, N) <= 256): one operand read "
                    "once from HBM, K split over warps and cluster CTAs",
    )
