"""What an sm90 TMA + WGMMA tile costs in shared memory and registers, and how its warpgroups and epilogue are laid
out: the arithmetic behind the sm90_cutlass space's resource rules (genome/sm90_cutlass_space.py re-exports it)."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Mapping

from .problem import Problem
from .space import ShapeRule

SMEM_BYTES_PER_BLOCK = 232448  # 227 KB: the opt-in maximum on sm_90
SMEM_BYTES_PER_SM = 233472     # 228 KB an SM, of which 1 KB is reserved per resident block
THREADS_PER_SM = 2048
REGS_PER_SM = 65536
BYTES_FP16 = 2
# a ws thread's registers beside its accumulators: ptxas gave sm90_swapab_splitk's 64x128x64 ws tile (64 accumulators
# a consumer thread) 90 registers (session 54, docs/results/splitk-two-ctas)
WS_OTHER_REGS = 26


def split_n(p: Mapping[str, Any]) -> bool:
    """Whether the cooperative schedule's two consumer warpgroups sit side by side along N."""
    return p.get("wg_split", "m") == "n" and p["schedule"] == "cooperative"


def epilogue_tile(p: Mapping[str, Any]) -> tuple[int, int]:
    """The epilogue subtile: the genome's, or the one CUTLASS's EpilogueTileAuto picks
    (sm90_compute_tile_shape_or_override); 64 x tile N with the warpgroups split along N (every subtile
    must hold some of each warpgroup's accumulators)."""
    from math import gcd
    if split_n(p):
        return 64, p["tile_n"]
    explicit = p.get("epilogue_tile", "auto")
    if explicit != "auto":
        em, en = (int(x) for x in explicit.split("x"))
        return em, en
    tm, tn = p["tile_m"], p["tile_n"]
    if p["schedule"] == "cooperative":
        return min(128, tm), gcd(min(32, tn), tn)
    return min(64, tm), gcd(min(32, tn), tn)


def epilogue_smem_bytes(p: Mapping[str, Any]) -> int:
    if p["epilogue"] != "tma":
        return 0
    em, en = epilogue_tile(p)
    stages_d = 2
    return stages_d * em * en * BYTES_FP16 + 256


def stage_bytes(p: Mapping[str, Any]) -> int:
    """Shared memory of one mainloop stage: an A tile and a B tile plus its pipeline barriers."""
    return (p["tile_m"] + p["tile_n"]) * p["tile_k"] * BYTES_FP16 + 16


def max_stages(p: Mapping[str, Any]) -> int:
    return (SMEM_BYTES_PER_BLOCK - epilogue_smem_bytes(p) - 1024) // stage_bytes(p)


def smem_bytes(p: Mapping[str, Any]) -> int:
    stages = p["stages"] or max_stages(p)
    return stages * stage_bytes(p) + epilogue_smem_bytes(p) + 1024


def acc_regs_per_thread(p: Mapping[str, Any]) -> int:
    """fp32 accumulators each consumer thread holds: cooperative splits the tile over two warpgroups."""
    consumer_threads = 256 if p["schedule"] == "cooperative" else 128
    return p["tile_m"] * p["tile_n"] // consumer_threads


def ws_resident_ctas(p: Mapping[str, Any]) -> int:
    """CTAs of a `ws` kernel (one producer and one consumer warpgroup, one CTA a tile, not persistent) that one SM
    holds at once: as many as its shared memory (an explicit stage count: the automatic one fills the SM), threads
    and registers (the accumulators plus WS_OTHER_REGS a thread, every thread alike) allow."""
    if not p["stages"]:
        return 1
    threads = 256
    by_smem = SMEM_BYTES_PER_SM // (smem_bytes(p) + 1024)
    by_regs = REGS_PER_SM // (threads * (acc_regs_per_thread(p) + WS_OTHER_REGS))
    return max(1, min(by_smem, THREADS_PER_SM // threads, by_regs))


def shrink_ring(p: dict, fits: Callable[[Mapping[str, Any]], bool], min_rows: int) -> dict:
    """The shared-memory repair of the TMA ring families: fewer pieces a stage until two stages fit, then fewer rows
    (not below `min_rows`), then the most stages of 2, 3, 4, 6, 8 that fit (at most the genome's)."""
    while p["pieces"] > 1 and not fits({**p, "stages": 2}):
        p["pieces"] //= 2
    while p["rows"] > min_rows and not fits({**p, "stages": 2}):
        p["rows"] //= 2
    p["stages"] = max([s for s in (2, 3, 4, 6, 8) if s <= p["stages"] and fits({**p, "stages": s})], default=2)
    return p


def two_ctas_smem_misfit(ring_bytes: int, static_bytes: int) -> "str | None":
    """Why two CTAs of `ring_bytes` dynamic and `static_bytes` static shared memory (plus the 1 KB reserved for each
    resident block) do not fit an SM, or None where they do: the `ctas_per_sm = 2` rule of the TMA ring families."""
    if 2 * (ring_bytes + static_bytes + 1024) > SMEM_BYTES_PER_SM:
        return f"two CTAs of {ring_bytes // 1024} KB of shared memory do not fit an SM (228 KB)"
    return None


def one_cta_per_sm(p: dict, rng: Any = None) -> dict:
    """The repair of a `ctas_per_sm = 2` that does not fit: one CTA an SM."""
    p["ctas_per_sm"] = 1
    return p


def _tma_row_pitch(family: str, p: Mapping[str, Any], problem: Problem) -> "str | None":
    if problem.k % 8:
        return (f"{family} loads rows through TMA, whose row pitch must be a multiple of 16 bytes, so K must be "
                f"a multiple of 8; K = {problem.k}")
    return None


def tma_k_alignment(family: str) -> ShapeRule:
    """The shape rule of a family that loads rows of A and W through TMA boxes (skinny_tma, stream_wgmma): a
    tensor map's row pitch must be a multiple of 16 bytes, so K a multiple of 8; rows past N or M are zero-filled."""
    return ShapeRule("k-alignment", "K a multiple of 8 (TMA's 16-byte row pitch); N and M may be anything",
                     partial(_tma_row_pitch, family))
