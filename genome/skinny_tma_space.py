"""The search space of the `skinny_tma` family: a TMA-fed streaming mma.sync kernel for skinny GEMMs.

The operand with more rows ("X") streams from HBM once through a ring of shared-memory stages filled by the
Tensor Memory Accelerator: each stage holds `pieces` boxes of `rows` rows x 64 k (128 bytes of each row), so
that DRAM sees runs of 128 x `pieces` bytes a row; the other operand ("Y", at most 16 rows) comes in beside it.
One producer thread issues the loads, `consumer_warps` warps multiply with mma.sync from ldmatrix. Rules keep
the stages within shared memory and the warps a whole tiling of a stage; shape rules ask for at most 16 rows of
the small operand and K a multiple of 8 (TMA's 16-byte row pitch). Measured first as a prototype
(docs/results/h200-tma-stream/). `y_resident` (space revision 8) keeps Y's whole K in shared memory after a CTA's
first row block, so the ring carries X alone; a shape rule then bounds K by the shared memory left. Y's box has
8 rows where Y has at most 8 (decode at batch 1-8), else 16.
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from .problem import Problem
from .sm90_resources import (SMEM_BYTES_PER_BLOCK, one_cta_per_sm, shrink_ring, tma_k_alignment,
                             two_ctas_smem_misfit)
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "skinny_tma"

MAX_SMALL_DIM = 16             # rows of the small operand: one 16-row TMA box, at most two n8 mma tiles
STATIC_SMEM_BYTES = 1024       # the ring's mbarriers (ptxas: 1024 bytes of static shared memory)

PARAMS = (
    ParamSpec("rows", (16, 32, 64), doc="rows of the streamed operand a CTA takes at a time (one TMA box)"),
    ParamSpec("pieces", (1, 2, 4, 8, 16), doc="64-k pieces (128 bytes of each row) a stage loads, one TMA box "
                                              "each: runs of 128 x pieces bytes a row"),
    ParamSpec("stages", (2, 3, 4, 6, 8), doc="stages of the shared-memory ring (loads in flight)"),
    ParamSpec("consumer_warps", (2, 4, 8), doc="warps multiplying: each 16-row group of a box gets "
                                               "consumer_warps / (rows / 16) of them, splitting a stage's k"),
    ParamSpec("ctas_per_sm", (1, 2), kind="runtime",
              doc="CTAs launched per SM (the grid: SMs x this, at most the row blocks); 2 where two fit"),
    ParamSpec("y_resident", (0, 1), implicit=True, revision=8,
              doc="1: Y's whole K stays in shared memory after a CTA's first row block (read from L2 once a CTA, "
                  "not once a row block) and the ring carries X alone; shared memory grows with K"),
)

BLOCKS = ("includes", "config", "kernel", "launch", "abi")


def smem_bytes(p: Mapping[str, Any]) -> int:
    """Dynamic shared memory of a CTA without Y's K (see `y_region_bytes`): the ring (X's box and, unless y_resident,
    Y's box a stage), the consumer warps' partial tiles and the 1 KB alignment pad."""
    stage = 128 * p["pieces"] * (p["rows"] + (0 if p.get("y_resident", 0) else 16))
    return p["stages"] * stage + p["consumer_warps"] * 256 * 4 + 1024


def y_box_rows(small: int) -> int:
    """Rows of Y's TMA box: 8 where Y has at most 8 rows (one n8 mma tile; half the bytes), else 16."""
    return 8 if small <= 8 else 16


def y_region_bytes(p: Mapping[str, Any], k: int, small: int = MAX_SMALL_DIM) -> int:
    """y_resident: Y's boxes (`y_box_rows(small)` rows) of every stage's worth of K (whole stages: K rounded up to
    64 x pieces), where Y has `small` rows."""
    if not p.get("y_resident", 0):
        return 0
    per_stage = 64 * p["pieces"]
    return (k + per_stage - 1) // per_stage * y_box_rows(small) * 128 * p["pieces"]


def least_smem_bytes(p: Mapping[str, Any]) -> int:
    """The dynamic shared memory a launch takes at the shortest K with the largest Y (16 rows): y_resident adds at
    least one stage's worth of Y's K, so that a genome the shape-free rules pass fits some K (and their repairs shrink
    one that fits none). Conservative for Y of at most 8 rows, whose boxes take half that."""
    return smem_bytes(p) + y_region_bytes(p, 1)


def _smem(p):
    if least_smem_bytes(p) + STATIC_SMEM_BYTES > SMEM_BYTES_PER_BLOCK:
        y = " and one stage's worth of Y's K" if p.get("y_resident", 0) else ""
        rows = f"{p['rows']} rows" if p.get("y_resident", 0) else f"{p['rows']} + 16 rows"
        return (f"{p['stages']} stages of {rows} x {p['pieces']} x 128 bytes{y} need "
                f"{least_smem_bytes(p) // 1024} KB of shared memory (> 227 KB)")
    return None


def _fix_smem(p: Params, rng: random.Random) -> Params:
    return shrink_ring(p, lambda q: least_smem_bytes(q) + STATIC_SMEM_BYTES <= SMEM_BYTES_PER_BLOCK, min_rows=16)


def _tiling(p):
    groups = p["rows"] // 16
    if p["consumer_warps"] % groups:
        return f"{p['consumer_warps']} consumer warps do not share {groups} 16-row groups evenly"
    split = p["consumer_warps"] // groups
    if (4 * p["pieces"]) % split:
        return f"{split} warps a group do not split a stage's {4 * p['pieces']} k16 steps evenly"
    return None


def _fix_tiling(p: Params, rng: random.Random) -> Params:
    groups = p["rows"] // 16
    if p["consumer_warps"] < groups:
        p["consumer_warps"] = groups
    elif p["consumer_warps"] % groups:
        p["consumer_warps"] = groups
    else:
        p["consumer_warps"] = max(groups, p["consumer_warps"] // 2)
    return p


def _two_ctas(p):
    return two_ctas_smem_misfit(least_smem_bytes(p), STATIC_SMEM_BYTES) if p["ctas_per_sm"] == 2 else None


RULES = (
    Rule("smem-capacity", "stages x 128 x pieces x (rows + 16, or rows with y_resident and one stage's worth of Y) "
                          "bytes + partial tiles fit in 227 KB", _smem, _fix_smem),
    Rule("warp-tiling", "consumer warps tile the 16-row groups and a stage's k16 steps evenly", _tiling, _fix_tiling),
    Rule("two-ctas", "ctas_per_sm 2 only where two CTAs' shared memory fits an SM", _two_ctas, one_cta_per_sm),
)


def _y_fits(p, problem: Problem):
    if not p.get("y_resident", 0):
        return None
    y = y_region_bytes(p, problem.k, min(problem.m, problem.n))
    total = smem_bytes(p) + y
    if total + STATIC_SMEM_BYTES > SMEM_BYTES_PER_BLOCK:
        return (f"y_resident keeps Y's K in shared memory: {y // 1024} KB at K = {problem.k} beside the ring's "
                f"{smem_bytes(p) // 1024} KB exceeds 227 KB")
    if p["ctas_per_sm"] == 2:
        return two_ctas_smem_misfit(total, STATIC_SMEM_BYTES)
    return None


def _skinny(p, problem: Problem):
    small = min(problem.m, problem.n)
    if small > MAX_SMALL_DIM:
        return f"skinny_tma is for min(M, N) <= {MAX_SMALL_DIM}; this problem has min(M, N) = {small}"
    return None


SHAPE_RULES = (
    ShapeRule("skinny", f"min(M, N) <= {MAX_SMALL_DIM}", _skinny),
    tma_k_alignment(FAMILY),
    ShapeRule("y-resident-fits", "y_resident: the ring and Y's K fit a CTA's shared memory (K bounded)", _y_fits),
)


def knobs(params: Mapping[str, Any]) -> list[int]:
    """The runtime knob vector passed through the C ABI (see kernel.cu.j2, block `abi`)."""
    return [int(params["ctas_per_sm"])]


def make_space() -> SearchSpace:
    return SearchSpace(
        family=FAMILY,
        params=PARAMS,
        rules=RULES,
        shape_rules=SHAPE_RULES,
        blocks=BLOCKS,
        description="TMA-fed streaming mma.sync kernel for skinny GEMMs (min(M, N) <= 16): one operand read "
                    "once from HBM in long runs of each row, through a ring of shared-memory stages",
    )
