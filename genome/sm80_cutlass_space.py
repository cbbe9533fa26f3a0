"""The search space of the `sm80_cutlass` family: CUTLASS 2.x GemmUniversal (mma.sync + cp.async
multistage) running on Hopper.

The rules follow CUTLASS's own generator for sm80 f16 tensor-op kernels (GenerateSM80_TensorOp_16816
in python/cutlass_library/generator.py): warp tiles of 32 or 64, 1 to 8 warps, the stages that fit
shared memory, access widths (alignments) 1 to 8 elements. The problem must be divisible by the
alignments (K for the rows of A and W, N for the rows of C).
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from .problem import Problem
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "sm80_cutlass"
SMEM_BYTES_PER_BLOCK = 232448
MAX_ACC_PER_THREAD = 128     # fp32 accumulators a thread holds (warp tile / 32)

PARAMS = (
    ParamSpec("tile_m", (32, 64, 128, 256), doc="threadblock tile M"),
    ParamSpec("tile_n", (32, 64, 128, 256), doc="threadblock tile N"),
    ParamSpec("tile_k", (32, 64), doc="threadblock tile K"),
    ParamSpec("warp_m", (32, 64), doc="warp tile M"),
    ParamSpec("warp_n", (32, 64), doc="warp tile N"),
    ParamSpec("stages", (2, 3, 4, 5, 6), doc="cp.async pipeline stages"),
    ParamSpec("swizzle", (1, 2, 4, 8), doc="threadblock raster swizzle (GemmIdentityThreadblockSwizzle<N>)"),
    ParamSpec("align_ab", (1, 2, 4, 8), doc="elements per access of A and W rows (K must be a multiple)"),
    ParamSpec("align_c", (1, 2, 4, 8), doc="elements per access of C rows (N must be a multiple)"),
    ParamSpec("split_mode", ("none", "parallel"), ordered=False,
              doc="parallel: K partitions write fp32 partial sums, a second launch adds them (fp32 throughout)"),
    ParamSpec("splits", (1, 2, 3, 4, 6, 8, 12, 16, 32, 64), kind="runtime",
              doc="parallel split-K partitions (split_mode parallel only)"),
)

BLOCKS = ("includes", "types", "tile_config", "kernel", "arguments", "abi")


def warps(p: Mapping[str, Any]) -> int:
    return (p["tile_m"] // p["warp_m"]) * (p["tile_n"] // p["warp_n"])


def smem_bytes(p: Mapping[str, Any]) -> int:
    return p["stages"] * (p["tile_m"] + p["tile_n"]) * p["tile_k"] * 2


def _warp_tiling(p):
    if p["tile_m"] % p["warp_m"] or p["tile_n"] % p["warp_n"]:
        return f"warp tile {p['warp_m']}x{p['warp_n']} does not divide the {p['tile_m']}x{p['tile_n']} tile"
    if warps(p) not in (1, 2, 4, 8):
        return f"{warps(p)} warps per threadblock; CUTLASS's sm80 kernels use 1, 2, 4 or 8"
    return None


def _fix_warp_tiling(p: Params, rng: random.Random) -> Params:
    p["warp_m"] = min(p["warp_m"], p["tile_m"])
    p["warp_n"] = min(p["warp_n"], p["tile_n"])
    while warps(p) > 8:
        if p["warp_m"] < 64 and p["tile_m"] >= 64:
            p["warp_m"] = 64
        elif p["warp_n"] < 64 and p["tile_n"] >= 64:
            p["warp_n"] = 64
        else:
            p["tile_m"] //= 2
    return p


def _accumulators(p):
    acc = p["warp_m"] * p["warp_n"] // 32
    if acc > MAX_ACC_PER_THREAD:
        return f"warp tile {p['warp_m']}x{p['warp_n']} holds {acc} fp32 accumulators per thread (> {MAX_ACC_PER_THREAD})"
    return None


def _smem(p):
    if smem_bytes(p) > SMEM_BYTES_PER_BLOCK:
        return f"{p['stages']} stages of a {p['tile_m']}x{p['tile_n']}x{p['tile_k']} tile need {smem_bytes(p) // 1024} KB (> 227 KB)"
    return None


def _fix_smem(p: Params, rng: random.Random) -> Params:
    while smem_bytes(p) > SMEM_BYTES_PER_BLOCK and p["stages"] > 2:
        p["stages"] -= 1
    if smem_bytes(p) > SMEM_BYTES_PER_BLOCK:
        p["tile_k"] = 32
    return p


def _thread_map(p):
    # each thread of the threadblock copies whole accesses of a stage: the tile must hold at least one
    # access per thread for A and for B, or CUTLASS's pitch-linear thread map does not tile
    threads = 32 * warps(p)
    for name, rows in (("A", p["tile_m"]), ("W", p["tile_n"])):
        if rows * p["tile_k"] // p["align_ab"] < threads:
            return f"a {rows}x{p['tile_k']} {name} stage has fewer {p['align_ab']}-element accesses than {threads} threads"
    return None


def _fix_thread_map(p: Params, rng: random.Random) -> Params:
    p["tile_k"] = 64
    if _thread_map(p):
        p["warp_m"], p["warp_n"] = 64, 64
    return p


def _pipelined_needs_two(p):
    if p["align_ab"] < 2 and p["stages"] != 2:
        return "2-byte accesses cannot use cp.async (4-byte minimum): align_ab 1 needs the 2-stage pipelined mainloop"
    return None


def _fix_pipelined(p: Params, rng: random.Random) -> Params:
    p["stages"] = 2
    return p


RULES = (
    Rule("warp-tiling", "warp tiles divide the threadblock tile into 1, 2, 4 or 8 warps", _warp_tiling, _fix_warp_tiling),
    Rule("accumulators", f"warp tile M x N / 32 <= {MAX_ACC_PER_THREAD} fp32 accumulators per thread", _accumulators,
         lambda p, rng: {**p, "warp_m": 32}),
    Rule("smem-capacity", "stages x (A + W) tiles fit 227 KB of shared memory", _smem, _fix_smem),
    Rule("thread-map", "a stage has at least one access per thread for A and for W", _thread_map, _fix_thread_map),
    Rule("align1-pipelined", "align_ab 1 only with 2 stages (no cp.async of 2 bytes)", _pipelined_needs_two,
         _fix_pipelined),
)


def _normalise_splits(p: Params) -> Params:
    """The splits knob means nothing without parallel split-K: equal kernels share one id."""
    if p["split_mode"] != "parallel":
        p["splits"] = 1
    return p


def _alignment(p, problem: Problem):
    bad = []
    if problem.k % p["align_ab"]:
        bad.append(f"K={problem.k} is not a multiple of align_ab={p['align_ab']}")
    if problem.n % p["align_c"]:
        bad.append(f"N={problem.n} is not a multiple of align_c={p['align_c']}")
    return "; ".join(bad) or None


SHAPE_RULES = (ShapeRule("alignment", "K a multiple of align_ab and N a multiple of align_c", _alignment),)


def knobs(params: Mapping[str, Any]) -> list[int]:
    """The runtime knob vector passed through the C ABI (see kernel.cu.j2, block `arguments`)."""
    return [int(params["splits"])]


def make_space() -> SearchSpace:
    return SearchSpace(
        family=FAMILY,
        params=PARAMS,
        rules=RULES,
        shape_rules=SHAPE_RULES,
        normalisers=(_normalise_splits,),
        blocks=BLOCKS,
        shape_knobs=("splits",),
        description="CUTLASS 2.x GemmUniversal (mma.sync, cp.async multistage, parallel split-K, alignments 1-8) "
                    "on sm_90",
    )
