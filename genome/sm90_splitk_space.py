"""The search space of the `sm90_splitk` family: sm90_cutlass with K split into a batch of fp32
partial products and a reduction launch, or a reduction in the GEMM's epilogue (templates/sm90_splitk).

Same tile parameters and rules as sm90_cutlass, the persistent scheduler only (the split is the
batch, not stream-K), and one more runtime knob, `ksplit`. K must split into equal parts of a
multiple of 8 elements (TMA's 16-byte batch stride), N a multiple of 8.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Mapping

from . import sm90_cutlass_space as _sm90
from .problem import Problem
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "sm90_splitk"
KSPLIT = ParamSpec("ksplit", (2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64), kind="runtime",
                   doc="K split into this many batches of fp32 partial sums, added by a second launch")

PDL = ParamSpec("pdl", (0, 1), kind="compile", implicit=True, revision=1,
                doc="launch the reduction as a programmatic dependent launch: its launch overlaps the GEMM's "
                    "epilogue, and it waits for the GEMM's results on the device")
REDUCE = ParamSpec("reduce", ("serial", "grouped"), kind="compile", ordered=False, implicit=True, revision=1,
                   doc="the reduction's threads: one a quad of C walking every split (serial), or up to 32 a quad "
                       "each adding every n-th split, combined by warp shuffles (grouped: more loads in flight "
                       "at a small M x N)")
# a parameter of its own (not a choice of reduce), so that a campaign created before it searches reduce exactly as
# it did: the blocks that now name fixup would otherwise cover reduce in its patched genomes
FIXUP = ParamSpec("fixup", ("launch", "inkernel"), kind="compile", ordered=False, implicit=True, revision=6,
                  doc="where the splits' partial sums are added: by a second launch (launch), or in the GEMM's "
                      "epilogue, each split of a tile adding 1/ksplit of it after waiting for the others "
                      "(inkernel: one cooperative launch, every work tile resident at once)")

# fixup inkernel: every split of a tile waits for the others, so all tiles x ksplit work tiles must be resident at
# once, one a CTA (the persistent grid is at most the SMs). The template checks the device's SM count at run time;
# the space holds the count of the H100 SXM and H200 (132), so that a search does not spend evaluations on what
# cannot run there.
INKERNEL_MAX_WORK_TILES = 132


def knobs(params: Mapping[str, Any]) -> list[int]:
    return [*_sm90.knobs(params), int(params["ksplit"])]


def _persistent(p):
    if p["scheduler"] != "persistent":
        return "sm90_splitk splits K as a batch: it uses the persistent scheduler, not stream-K"
    return None


def _fix_persistent(p: Params, rng: random.Random) -> Params:
    p["scheduler"] = "persistent"
    return p


def _inkernel_clusters(p):
    if p.get("fixup") == "inkernel" and p["cluster_m"] * p["cluster_n"] != 1:
        return "fixup inkernel runs on a cooperative launch of one-CTA clusters"
    return None


def _fix_inkernel_clusters(p: Params, rng: random.Random) -> Params:
    p["cluster_m"] = p["cluster_n"] = 1
    return p


def _normalise_inkernel(p: Params) -> Params:
    """With the in-kernel reduction there is no reduction launch (pdl, reduce), no epilogue but its own, which uses no
    shared memory (epilogue: nosmem, so the shared-memory rule charges none), and one work tile a CTA on an unswizzled
    scheduler (swizzle, raster): those knobs take fixed values, so equal kernels share one id."""
    if p.get("fixup") == "inkernel":
        p["pdl"] = 0
        p["reduce"] = "serial"
        p["epilogue"] = "nosmem"
        p["swizzle"] = 1
        p["raster"] = "heuristic"
    return p


def _inkernel_resident(p, problem: Problem):
    if p.get("fixup") != "inkernel":
        return None
    tiles = -(-problem.m // p["tile_m"]) * -(-problem.n // p["tile_n"])
    if tiles * p["ksplit"] > INKERNEL_MAX_WORK_TILES:
        return (f"fixup inkernel: {tiles} tiles x {p['ksplit']} splits is more work tiles than the "
                f"{INKERNEL_MAX_WORK_TILES} SMs hold at once")
    return None


def _even_split(p, problem: Problem):
    if problem.k % (8 * p["ksplit"]):
        return (f"K={problem.k} does not split into {p['ksplit']} equal parts of a multiple of 8 "
                "(TMA's 16-byte batch stride)")
    if problem.n % 8:
        return f"N={problem.n}: the fp32 partial sums and fp16 C need rows of a multiple of 8"
    return None


def make_space() -> SearchSpace:
    base = _sm90.make_space(warpgroup_split=False)
    rules = tuple(r for r in base.rules if r.name != "splits-need-streamk") + (
        Rule("persistent-scheduler", "the persistent scheduler (the split is a batch)", _persistent,
             _fix_persistent),
        Rule("inkernel-clusters", "fixup inkernel: one-CTA clusters (a cooperative launch)", _inkernel_clusters,
             _fix_inkernel_clusters))
    params = _sm90.derived_params(base.params, fixed=_sm90.AUTO_EPILOGUE_TILE)
    return replace(base, family=FAMILY, params=(*params, KSPLIT, PDL, REDUCE, FIXUP), rules=rules, shape_knobs=("ksplit",),
                   shape_rules=(ShapeRule("even-split", "K a multiple of 8 x ksplit, N a multiple of 8",
                                          _even_split),
                                ShapeRule("inkernel-resident", "fixup inkernel: tiles x ksplit <= "
                                          f"{INKERNEL_MAX_WORK_TILES} work tiles", _inkernel_resident)),
                   normalisers=(*base.normalisers, _normalise_inkernel),
                   description="sm90_cutlass with K split into a batch of fp32 partial sums and a reduction "
                               "launch (few output tiles, long K)")
