"""The search space of the `stream_wgmma` family: a weight-streaming wgmma kernel for GEMMs with one small side.

The operand with more rows ("X") streams from HBM once through a ring of shared-memory stages filled by the
Tensor Memory Accelerator: each stage holds `pieces` boxes of `rows` rows x 64 k (128 bytes of each row), so that
DRAM sees runs of 128 x `pieces` bytes a row; `tile_s` rows of the other operand ("Y", the small side, at most
256 rows) come in beside it, a small side above tile_s being a grid of small-side tiles that read the same X rows
side by side (the second read from L2).
One producer thread issues the loads; rows / 64 consumer warpgroups multiply with wgmma m64 n{tile_s} k16 straight
from the swizzled stages. A work unit is a small-side tile of a row block; the runtime knob `ksplit` splits K over
that many units of each (fp32 partial sums in the workspace, then a second kernel adds them up), `ctas_per_sm`
launches one or two CTAs an SM.
Rules keep the stages within shared memory and two CTAs an SM within its shared memory and registers; shape
rules ask for a small side of at most 256 rows (the family's domain), K a multiple of 8 (TMA's 16-byte row pitch)
and at least one stage of k for every split. Measured first as a prototype (docs/results/h200-stream-wgmma/).
"""

from __future__ import annotations

import random
from typing import Any, Mapping

from .problem import Problem
from .sm90_resources import (SMEM_BYTES_PER_BLOCK, one_cta_per_sm, shrink_ring, tma_k_alignment,
                             two_ctas_smem_misfit)
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "stream_wgmma"

STATIC_SMEM_BYTES = 1024       # the ring's mbarriers (ptxas: 1024 bytes of static shared memory)
REGS_PER_SM = 65536
MAX_SMALL_SIDE = 256           # the family's domain: min(M, N) at most this
MAX_SMALL_SIDE_CLUSTER = 1024  # ... and with a cluster along K (small M x N, long K)
OTHER_REGS = 40                # a consumer thread's registers besides its tile_s / 2 accumulators where ptxas is held to
                               # two CTAs an SM (kernel.cu.j2: kMinBlocks)

PARAMS = (
    ParamSpec("rows", (64, 128), doc="rows of the streamed operand a work unit takes (one TMA box): rows / 64 "
                                     "consumer warpgroups, each a wgmma m64 block"),
    ParamSpec("tile_s", (16, 32, 64, 96, 128, 192, 256),
              doc="rows of the small operand a stage holds (the wgmma N); a small side above it is a grid of "
                  "ceil(small / tile_s) tiles, rows past the small side zero-filled"),
    ParamSpec("pieces", (1, 2, 4), doc="64-k pieces (128 bytes of each row) a stage loads, one TMA box each: "
                                       "runs of 128 x pieces bytes a row"),
    ParamSpec("stages", (2, 3, 4, 6, 8), doc="stages of the shared-memory ring (loads in flight)"),
    ParamSpec("ksplit", (1, 2, 3, 4, 6, 8), kind="runtime",
              doc="work units a row block's K is split into (fp32 partial sums in the workspace, added up by a "
                  "second kernel); more units for the SMs where the row blocks are few"),
    ParamSpec("ctas_per_sm", (1, 2), kind="runtime",
              doc="CTAs launched per SM (the grid: SMs x this, at most the work units); 2 where two fit"),
    ParamSpec("cluster_k", (1, 2, 4, 8), implicit=True, revision=9,
              doc="CTAs of a thread-block cluster that split a work unit's K, each adding its peers' sums of the "
                  "rows it stores, pushed into its shared memory (no partial sums through L2, no second kernel); "
                  "one unit a cluster, every unit launched at once"),
)

BLOCKS = ("includes", "config", "kernel", "launch", "abi")


def threads(p: Mapping[str, Any]) -> int:
    return 128 * (p["rows"] // 64 + 1)


def recv_bytes(p: Mapping[str, Any]) -> int:
    """The shared memory a CTA of a cluster receives its peers' sums in: theirs of the rows it stores (kRecvBytes)."""
    c = int(p.get("cluster_k", 1))
    return 0 if c <= 1 else (c - 1) * (p["rows"] // c) * p["tile_s"] * 4


def smem_bytes(p: Mapping[str, Any]) -> int:
    """Dynamic shared memory of a CTA: the ring, the 1 KB alignment pad, and with a cluster the peers' sums."""
    return p["stages"] * 128 * p["pieces"] * (p["rows"] + p["tile_s"]) + 1024 + recv_bytes(p)


def regs_per_thread(p: Mapping[str, Any]) -> int:
    """An estimate: the consumer threads' accumulators plus what the rest of the kernel holds."""
    return p["tile_s"] // 2 + OTHER_REGS


def _fits(p) -> bool:
    return smem_bytes(p) + STATIC_SMEM_BYTES <= SMEM_BYTES_PER_BLOCK


def _smem(p):
    if not _fits(p):
        recv = f" and a cluster's {recv_bytes(p) // 1024} KB of received sums" if recv_bytes(p) else ""
        return (f"{p['stages']} stages of {p['rows']} + {p['tile_s']} rows x {p['pieces']} x 128 bytes{recv} need "
                f"{smem_bytes(p) // 1024} KB of shared memory (> 227 KB)")
    return None


def _fix_smem(p: Params, rng: random.Random) -> Params:
    return shrink_ring(p, _fits, min_rows=64)


def _two_ctas(p):
    if p["ctas_per_sm"] != 2:
        return None
    smem = two_ctas_smem_misfit(smem_bytes(p), STATIC_SMEM_BYTES)
    if smem:
        return smem
    if 2 * threads(p) * regs_per_thread(p) > REGS_PER_SM:
        return (f"two CTAs of {threads(p)} threads at about {regs_per_thread(p)} registers each do not fit an SM's "
                f"{REGS_PER_SM} registers")
    return None


def _cluster_rows(p):
    c = int(p.get("cluster_k", 1))
    if c > p["rows"] // 16:
        return (f"a cluster of {c} CTAs stores whole 16-row warps of a {p['rows']}-row unit: at most "
                f"{p['rows'] // 16} CTAs")
    return None


def _fix_cluster_rows(p: Params, rng: random.Random) -> Params:
    return {**p, "cluster_k": p["rows"] // 16}


def _cluster_alone(p):
    if int(p.get("cluster_k", 1)) > 1 and (p["ksplit"] != 1 or p["ctas_per_sm"] != 1):
        return (f"a cluster along K (cluster_k {p['cluster_k']}) launches one unit a cluster, all at once: ksplit 1 "
                f"and ctas_per_sm 1 (got {p['ksplit']} and {p['ctas_per_sm']})")
    return None


def _fix_cluster_alone(p: Params, rng: random.Random) -> Params:
    return {**p, "ksplit": 1, "ctas_per_sm": 1}


RULES = (
    Rule("cluster-rows", "cluster_k at most rows / 16 (a CTA of the cluster stores whole 16-row warps)",
         _cluster_rows, _fix_cluster_rows),
    Rule("cluster-alone", "with cluster_k > 1: ksplit 1 and ctas_per_sm 1", _cluster_alone, _fix_cluster_alone),
    Rule("smem-capacity", "stages x 128 x pieces x (rows + tile_s) bytes, and with a cluster its received sums, fit in "
         "227 KB", _smem, _fix_smem),
    Rule("two-ctas", "ctas_per_sm 2 only where two CTAs' shared memory and registers fit an SM", _two_ctas,
         one_cta_per_sm),
)


def _small_side(p, problem: Problem):
    small = min(problem.m, problem.n)
    if int(p.get("cluster_k", 1)) > 1:
        if small > MAX_SMALL_SIDE_CLUSTER:
            return (f"stream_wgmma with a cluster along K takes a small side of at most {MAX_SMALL_SIDE_CLUSTER} rows; "
                    f"this problem's min(M, N) is {small}")
        return None
    if small > MAX_SMALL_SIDE:
        return (f"stream_wgmma streams the large operand past a small side of at most {MAX_SMALL_SIDE} rows; this "
                f"problem's min(M, N) is {small}")
    return None


def _split_has_k(p, problem: Problem):
    chunks = -(-problem.k // (64 * p["pieces"]))
    parts = max(int(p["ksplit"]), int(p.get("cluster_k", 1)))
    if parts > chunks:
        which = "ksplit" if parts == p["ksplit"] else "cluster_k"
        return (f"{which} {parts} leaves a split without k: K = {problem.k} is {chunks} stages of "
                f"{64 * p['pieces']}")
    return None


SHAPE_RULES = (
    ShapeRule("small-side", f"min(M, N) <= {MAX_SMALL_SIDE} ({MAX_SMALL_SIDE_CLUSTER} with a cluster along K)",
              _small_side),
    tma_k_alignment(FAMILY),
    ShapeRule("split-has-k", "ksplit and cluster_k at most K's stages of 64 x pieces", _split_has_k),
)


def knobs(params: Mapping[str, Any]) -> list[int]:
    """The runtime knob vector passed through the C ABI (see kernel.cu.j2, block `abi`)."""
    return [int(params["ksplit"]), int(params["ctas_per_sm"])]


def make_space() -> SearchSpace:
    return SearchSpace(
        family=FAMILY,
        params=PARAMS,
        rules=RULES,
        shape_rules=SHAPE_RULES,
        blocks=BLOCKS,
        description="weight-streaming wgmma kernel for GEMMs with a small side (min(M, N) <= 256): the large "
                    "operand read once from HBM in long runs of each row, through a ring of shared-memory stages",
    )
