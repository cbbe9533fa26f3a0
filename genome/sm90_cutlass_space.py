"""The search space of the `sm90_cutlass` family (CUTLASS 3.x CollectiveBuilder, TMA + WGMMA).

The rules follow what CUTLASS's sm90 builders accept (see CUTLASS's own generator,
python/cutlass_library/generator.py, and the static_asserts of the sm90 collectives) plus the
resource limits of an H100/H200: 227 KB of shared memory per block, 8 CTAs per portable cluster,
and the register budget of the consumer warpgroups.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any, Mapping

from .problem import Problem
from .sm90_resources import (BYTES_FP16, SMEM_BYTES_PER_BLOCK, acc_regs_per_thread, epilogue_smem_bytes,  # noqa: F401
                             epilogue_tile, max_stages, smem_bytes, split_n, stage_bytes)
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "sm90_cutlass"

MAX_CLUSTER_CTAS = 8           # portable cluster size
MAX_ACC_REGS = 192             # fp32 accumulator registers per consumer thread we allow
MAX_TMA_BOX_ROWS = 256         # rows (and columns) of one TMA box (cuTensorMapEncodeTiled's boxDim limit)
# The WGMMA widths CuTe's ss_op_selector (cute/arch/mma_sm90.hpp) offers without
# CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED. The template defines that macro for any other tile N: without it
# such a tile runs as several narrower WGMMAs (128x144 as nine 64x16 ones a k-step, at half the speed).
GMMA_BASE_N = (8, 16, 32, 64, 96, 128, 192, 256)

PARAMS = (
    ParamSpec("schedule", ("cooperative", "pingpong"), doc="warp-specialised kernel schedule", ordered=False),
    ParamSpec("tile_m", (64, 128, 192, 256, 320, 448), added=((192, 2), (320, 2), (448, 2)),
              doc="CTA tile M (192, 320 and 448 only with wg_split n)"),
    ParamSpec("tile_n", (16, 32, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256),
              doc="CTA tile N (multiple of 8)"),
    ParamSpec("tile_k", (32, 64, 128), doc="CTA tile K"),
    ParamSpec("cluster_m", (1, 2, 4, 8), added=((8, 4),), doc="cluster shape M (B multicast)"),
    ParamSpec("cluster_n", (1, 2, 4, 8), added=((8, 4),), doc="cluster shape N (A multicast)"),
    ParamSpec("stages", (0, 2, 3, 4, 5, 6, 7, 8), doc="mainloop stages; 0 = as many as fit (auto carveout)"),
    ParamSpec("epilogue", ("tma", "nosmem"), doc="TMA epilogue through shared memory, or direct stores",
              ordered=False),
    ParamSpec("scheduler", ("persistent", "streamk"), doc="tile scheduler", ordered=False),
    ParamSpec("raster", ("heuristic", "along_m", "along_n"), kind="runtime", doc="tile raster order",
              ordered=False),
    ParamSpec("swizzle", (1, 2, 4, 8), kind="runtime", doc="max swizzle size of the tile scheduler"),
    ParamSpec("splits", (1, 2, 3, 4, 6, 8, 16), kind="runtime", doc="split-K factor (stream-K scheduler only)"),
    ParamSpec("decomposition", ("heuristic", "data_parallel", "split_k", "stream_k"), kind="runtime",
              doc="stream-K scheduler decomposition", ordered=False),
    ParamSpec("reduction", ("deterministic", "nondeterministic"), kind="runtime",
              doc="stream-K partial reduction order", ordered=False),
    # added after the campaigns of sessions 1-22: implicit, so their genomes keep their ids and builds
    ParamSpec("epilogue_tile", ("auto", "64x64", "64x128", "128x64", "128x96", "128x128",
                                "64x48", "128x48", "64x80", "128x80", "64x112", "128x112"), ordered=False,
              implicit=True, doc="subtile of C the TMA epilogue stores per step (M x N); auto = CUTLASS's "
                                 "EpilogueTileAuto (64 or 128 x gcd(32, tile N): 16 wide for tile N of 80, "
                                 "112, 144, 176, 208, 240); M is 128 with the cooperative schedule, else 64; "
                                 "N of 48, 80 and 112 divide the tiles fitted to the SM count"),
    # added in space revision 2 (session 32)
    ParamSpec("wg_split", ("m", "n"), ordered=False, implicit=True, revision=2,
              doc="how the cooperative schedule's two consumer warpgroups share the tile: m = one above the "
                  "other (CUTLASS's builder: 64-row WGMMAs, tile M a multiple of 128), n = side by side, each "
                  "on tile N / 2 columns and every row (tile M any multiple of 64 from 128: 192, 320, 448; "
                  "each warpgroup re-reads the whole A tile; with C row-major tile N 128 or 256); its epilogue "
                  "stores 64 x tile N subtiles"),
    # added in space revision 5 (session 40)
    ParamSpec("cluster_grid", ("cutlass", "occupancy"), ordered=False, implicit=True, revision=5,
              doc="how many clusters a persistent kernel launches: cutlass = CUTLASS's estimate from the SM count "
                  "(GPCs of 18 SMs: 29 clusters of 4 and 14 of 8 on 132 SMs, where an H200 runs 30 and 15), "
                  "occupancy = what cudaOccupancyMaxActiveClusters says this kernel runs at once (asked once per "
                  "device); the same grid with clusters of 1 or 2 and for the ws schedule, which is not "
                  "persistent (normalised to cutlass there)"),
)
# a derived family whose kernels were never built with an explicit epilogue subtile pins it (`derived_params`)
AUTO_EPILOGUE_TILE = {"epilogue_tile": ("auto",)}

BLOCKS = ("includes", "types", "tile_config", "epilogue", "mainloop", "kernel", "arguments", "abi")

RASTER_CODES = {"heuristic": 0, "along_m": 1, "along_n": 2}
DECOMPOSITION_CODES = {"heuristic": 0, "data_parallel": 1, "split_k": 2, "stream_k": 3}
REDUCTION_CODES = {"deterministic": 0, "nondeterministic": 1}


def _choices(name: str) -> tuple:
    return next(spec.choices for spec in PARAMS if spec.name == name)


# -- rules ------------------------------------------------------------------------------------

def _power_of_two_below(n: int) -> int:
    """The largest tile M of CUTLASS's builders (64, 128, 256) below n."""
    return max(m for m in (64, 128, 256) if m < n)


def _coop_tile_m(p):
    if p["schedule"] == "cooperative" and p["tile_m"] < 128:
        return f"cooperative schedule needs tile M >= 128 (two consumer warpgroups of 64 rows); tile M is {p['tile_m']}"
    return None


# the rule's name, which evolution/vendor_seeds.py asks for (a vendor tile only this schedule holds is mirrored with it)
TILE_M_WG_SPLIT_RULE = "tile-m-wg-split"


def _tile_m_split_n(p):
    if p["tile_m"] % 128 and p["tile_m"] > 64 and not split_n(p):
        return (f"tile M {p['tile_m']} (not 64, 128 or 256) needs the cooperative schedule with wg_split n (split "
                "along M each warpgroup takes half the rows, a multiple of 64)")
    return None


def _fix_tile_m_split_n(p: Params, rng: random.Random) -> Params:
    p["tile_m"] = _power_of_two_below(p["tile_m"] + 1)
    return p


def _wg_split_n(p, row_major_c: bool = True):
    if p.get("wg_split", "m") != "n":
        return None
    if p["schedule"] != "cooperative":
        return f"wg_split n is a split of the cooperative schedule's warpgroups (schedule is {p['schedule']})"
    if p["tile_n"] % 16:
        return f"wg_split n needs tile N a multiple of 16 (each warpgroup's WGMMA is tile N / 2 wide); tile N is {p['tile_n']}"
    if row_major_c and p["tile_n"] not in (128, 256):
        # the epilogue's shared-memory subtile of a row-major C is laid out in swizzle atoms as wide as the
        # largest of 64, 32, 16 columns dividing tile N; each warpgroup's half must be whole atoms (else CuTe's
        # store partition fails to compile: seen with tile N 192)
        return (f"wg_split n with C row-major needs tile N 128 or 256 (each warpgroup's tile N / 2 columns of the "
                f"epilogue subtile must be whole 64-column swizzle atoms); tile N is {p['tile_n']}")
    if p["scheduler"] != "persistent":
        return "wg_split n is built with the persistent tile scheduler only"
    if p["epilogue"] != "tma" or p.get("epilogue_tile", "auto") != "auto":
        return "wg_split n needs the TMA epilogue with its own subtile (epilogue_tile auto: 64 x tile N)"
    return None


def _fix_wg_split_n(p: Params, rng: random.Random) -> Params:
    p["wg_split"] = "m"
    return p


def _tma_box(p):
    # each CTA loads its slice of the A tile (tile M / cluster N rows: the multicast splits it) in one TMA box,
    # and a box holds at most 256 rows: a larger one fails cuTensorMapEncodeTiled, and the kernel then hangs
    # (seen on the H200 with tile M 320 and 448 without a cluster along N)
    if p["tile_m"] // p["cluster_n"] > MAX_TMA_BOX_ROWS:
        return (f"tile M {p['tile_m']} over cluster N {p['cluster_n']} is {p['tile_m'] // p['cluster_n']} rows in one "
                f"TMA box (at most {MAX_TMA_BOX_ROWS})")
    return None


def _fix_tma_box(p: Params, rng: random.Random) -> Params:
    if p["cluster_n"] * 2 * p["cluster_m"] <= MAX_CLUSTER_CTAS and rng.random() < 0.5:
        p["cluster_n"] *= 2
    else:
        p["tile_m"] = _power_of_two_below(p["tile_m"] + 1)
    return p


# sm90_swapab's C^T is column-major: its epilogue subtile's swizzle atoms run along M, any tile N splits
WG_SPLIT_N_COLUMN_MAJOR_C = Rule("wg-split-n", "wg_split n: cooperative, tile N a multiple of 16, persistent "
                                 "scheduler, TMA epilogue with its own subtile",
                                 lambda p: _wg_split_n(p, row_major_c=False), _fix_wg_split_n)


def _fix_coop_tile_m(p: Params, rng: random.Random) -> Params:
    if rng.random() < 0.5:
        p["schedule"] = "pingpong"
    else:
        p["tile_m"] = 128
    return p


def _pingpong_streamk(p):
    if p["schedule"] == "pingpong" and p["scheduler"] == "streamk":
        return "ping-pong cannot use the stream-K scheduler (CUTLASS pairs stream-K with the cooperative schedule)"
    return None


def _fix_pingpong_streamk(p: Params, rng: random.Random) -> Params:
    if p["tile_m"] >= 128 and rng.random() < 0.5:
        p["schedule"] = "cooperative"
    else:
        p["scheduler"] = "persistent"
    return p


def _cluster_size(p):
    ctas = p["cluster_m"] * p["cluster_n"]
    if ctas > MAX_CLUSTER_CTAS:
        return f"cluster of {ctas} CTAs exceeds {MAX_CLUSTER_CTAS} (the portable cluster size)"
    return None


def _fix_cluster_size(p: Params, rng: random.Random) -> Params:
    key = "cluster_m" if p["cluster_m"] >= p["cluster_n"] else "cluster_n"
    p[key] //= 2
    return p


# The rows of an operand tile each CTA of a cluster loads by TMA and multicasts to the others: tile N / cluster M
# of B, tile M / cluster N of A. CuTe splits the tile's TMA box into that many slices of whole rows; with the
# 128-byte swizzle a slice need not be whole 8-row swizzle atoms (revision 3's rule): nvcc builds slices of 4 to 60
# rows that are not multiples of 8, and those of 4-row multiples tried passed the gate on the H200 at every shape
# (docs/results/h200-multicast-slices).
MULTICAST_SLICE_ROWS = 4


def _bad_slice(tile: int, cluster: int, rows: int) -> bool:
    return bool(tile % cluster or (tile // cluster) % rows)


def _multicast_slices(p, rows: int):
    for tile, cluster, operand, name in ((p["tile_n"], p["cluster_m"], "N", "M"),
                                         (p["tile_m"], p["cluster_n"], "M", "N")):
        if _bad_slice(tile, cluster, rows):
            return (f"tile {operand} {tile} split over cluster {name} {cluster} is not a multiple of {rows} rows "
                    "(each CTA multicasts a slice of whole rows of the operand tile)")
    return None


def _multicast_split(p):
    return _multicast_slices(p, MULTICAST_SLICE_ROWS)


def _multicast_split_8(p):
    return _multicast_slices(p, 8)


def _halve_cluster(p: Params, rows: int) -> Params:
    key = "cluster_m" if _bad_slice(p["tile_n"], p["cluster_m"], rows) else "cluster_n"
    p[key] = max(1, p[key] // 2)
    return p


def _fix_multicast_split(p: Params, rng: random.Random) -> Params:
    return _halve_cluster(p, MULTICAST_SLICE_ROWS)


def _fix_multicast_split_8(p: Params, rng: random.Random) -> Params:
    return _halve_cluster(p, 8)


def _acc_registers(p):
    regs = acc_regs_per_thread(p)
    if regs > MAX_ACC_REGS:
        return (f"a {p['tile_m']}x{p['tile_n']} tile needs {regs} fp32 accumulator registers per consumer "
                f"thread with the {p['schedule']} schedule (limit {MAX_ACC_REGS}: more spills)")
    return None


def _fix_acc_registers(p: Params, rng: random.Random) -> Params:
    if p["tile_m"] > 64 and (p["tile_m"] >= p["tile_n"] or rng.random() < 0.5):
        p["tile_m"] = _power_of_two_below(p["tile_m"])
    else:
        smaller = [n for n in _choices("tile_n") if n < p["tile_n"]]
        p["tile_n"] = smaller[-1] if smaller else p["tile_n"]
    return p


def _smem_capacity(p):
    if p["stages"]:
        need = smem_bytes(p)
        if need > SMEM_BYTES_PER_BLOCK:
            return (f"{p['stages']} stages of a {p['tile_m']}x{p['tile_n']}x{p['tile_k']} tile need "
                    f"{need // 1024} KB of shared memory; the limit is {SMEM_BYTES_PER_BLOCK // 1024} KB")
    elif max_stages(p) < 2:
        return (f"not even 2 stages of a {p['tile_m']}x{p['tile_n']}x{p['tile_k']} tile fit in "
                f"{SMEM_BYTES_PER_BLOCK // 1024} KB of shared memory")
    return None


def _fix_smem_capacity(p: Params, rng: random.Random) -> Params:
    fit = max_stages(p)
    if fit >= 2:
        # explicit stages that do not fit: the most that do (never 0 = auto, which is a choice of its own)
        p["stages"] = max(s for s in _choices("stages") if 2 <= s <= fit) if p["stages"] else 0
    elif p["tile_k"] > 32:
        p["tile_k"] //= 2
    else:
        p["tile_n"] = 128
    return p


def _epilogue_subtile(p):
    tile = p.get("epilogue_tile", "auto")
    if tile == "auto":
        return None
    em, en = epilogue_tile(p)
    if p["epilogue"] != "tma":
        return f"an epilogue subtile ({tile}) needs the TMA epilogue (epilogue is {p['epilogue']})"
    want = 128 if p["schedule"] == "cooperative" else 64
    if em != want:
        return (f"epilogue subtile {tile}: its M must be {want} with the {p['schedule']} schedule (CUTLASS's "
                "sm90 epilogue asserts it)")
    if p["tile_n"] % en or p["tile_m"] % em:
        return f"epilogue subtile {tile} does not divide the {p['tile_m']}x{p['tile_n']} tile"
    return None


def _fix_epilogue_subtile(p: Params, rng: random.Random) -> Params:
    p["epilogue_tile"] = "auto"
    return p


def _splits_need_streamk(p):
    if p["splits"] > 1 and p["scheduler"] != "streamk":
        return f"splits={p['splits']} needs the stream-K scheduler (the persistent scheduler does not split K)"
    return None


def _fix_splits(p: Params, rng: random.Random) -> Params:
    if p["schedule"] == "cooperative" and rng.random() < 0.5:
        p["scheduler"] = "streamk"
    else:
        p["splits"] = 1
    return p


RULES = (
    Rule("cooperative-tile-m", "cooperative schedule needs tile M >= 128", _coop_tile_m, _fix_coop_tile_m),
    Rule(TILE_M_WG_SPLIT_RULE, "tile M of 192, 320 or 448 only with the cooperative schedule split along N",
         _tile_m_split_n, _fix_tile_m_split_n),
    Rule("wg-split-n", "wg_split n: cooperative, tile N 128 or 256, persistent scheduler, TMA epilogue with its own "
         "subtile", _wg_split_n, _fix_wg_split_n),
    Rule("tma-box", f"tile M / cluster N <= {MAX_TMA_BOX_ROWS} rows (one TMA box)", _tma_box, _fix_tma_box),
    Rule("pingpong-streamk", "ping-pong cannot use the stream-K scheduler", _pingpong_streamk, _fix_pingpong_streamk),
    Rule("cluster-size", f"cluster_m * cluster_n <= {MAX_CLUSTER_CTAS} CTAs", _cluster_size, _fix_cluster_size),
    Rule("multicast-slice", f"tile N / cluster M and tile M / cluster N are multiples of {MULTICAST_SLICE_ROWS}",
         _multicast_split, _fix_multicast_split, since=4,
         before=Rule("multicast-slice", "tile N / cluster M and tile M / cluster N are multiples of 8",
                     _multicast_split_8, _fix_multicast_split_8)),
    Rule("accumulator-registers", f"tile M x tile N / consumer threads <= {MAX_ACC_REGS} fp32 registers",
         _acc_registers, _fix_acc_registers),
    Rule("smem-capacity", f"stages x (A + B tile) + epilogue <= {SMEM_BYTES_PER_BLOCK // 1024} KB shared memory",
         _smem_capacity, _fix_smem_capacity),
    Rule("splits-need-streamk", "split-K factor > 1 only with the stream-K scheduler", _splits_need_streamk, _fix_splits),
    Rule("epilogue-subtile", "an explicit epilogue subtile: TMA epilogue, M = 128 cooperative else 64, divides the "
         "tile", _epilogue_subtile, _fix_epilogue_subtile),
)


def _normalise_runtime(p: Params) -> Params:
    """Knobs the kernel ignores take their neutral value, so equal kernels share one id; so does cluster_grid
    where the grid is the same either way: clusters of 1 or 2 CTAs, whose count CUTLASS's estimate gets right
    on the 132-SM H100 and H200 (GPCs of 18 SMs and one of 6: 132 CTAs either way; another SM count or GPC
    layout could differ), and the ws schedule, which has no persistent grid."""
    if p.get("cluster_grid", "cutlass") != "cutlass" and (p["cluster_m"] * p["cluster_n"] < 4 or p["schedule"] == "ws"):
        p["cluster_grid"] = "cutlass"
    if p["scheduler"] != "streamk":
        p["splits"] = 1
        p["decomposition"] = "heuristic"
        p["reduction"] = "deterministic"
    else:
        if p["splits"] > 1:
            p["decomposition"] = "split_k"  # CUTLASS: splits > 1 bypasses stream-K in favour of split-K
        elif p["decomposition"] == "split_k":
            p["decomposition"] = "data_parallel"
        if p["decomposition"] == "data_parallel":
            p["reduction"] = "deterministic"
    return p


def _alignment(p, problem: Problem):
    bad = []
    if problem.k % 8:
        bad.append(f"K={problem.k} (rows of A and W)")
    if problem.n % 8:
        bad.append(f"N={problem.n} (rows of C)")
    if bad:
        return ("sm90_cutlass needs 16-byte aligned rows for TMA, i.e. multiples of 8 fp16 elements; "
                f"not aligned: {', '.join(bad)}")
    return None


SHAPE_RULES = (ShapeRule("tma-alignment", "K and N multiples of 8 (16-byte rows for TMA)", _alignment),)


def knobs(params: Mapping[str, Any]) -> list[int]:
    """The runtime knob vector passed through the C ABI (see kernel.cu.j2, block `arguments`)."""
    return [
        RASTER_CODES[params["raster"]],
        int(params["swizzle"]),
        int(params["splits"]),
        DECOMPOSITION_CODES[params["decomposition"]],
        REDUCTION_CODES[params["reduction"]],
    ]


def derived_params(params: "tuple[ParamSpec, ...]", fixed: "Mapping[str, tuple]" = {},
                   replaced: "tuple[ParamSpec, ...]" = ()) -> "tuple[ParamSpec, ...]":
    """The parameters of a family derived from this one: `params` in order, those named in `fixed`
    pinned to its choices (their doc says so), those of `replaced` swapped for its spec of the same name."""
    swap = {spec.name: spec for spec in replaced}
    return tuple(swap[p.name] if p.name in swap else
                 replace(p, choices=fixed[p.name], doc=p.doc + " (fixed in this family)",
                         added=tuple(a for a in p.added if a[0] in fixed[p.name][1:]))
                 if p.name in fixed else p for p in params)


def make_space(warpgroup_split: bool = True) -> SearchSpace:
    """The family's space; with `warpgroup_split` False (a derived family whose template does not build the
    split along N) wg_split is pinned to m and tile M has the choices it had before."""
    params = PARAMS if warpgroup_split else derived_params(
        tuple(p.as_of(1) if p.name == "tile_m" else p for p in PARAMS), fixed={"wg_split": ("m",)})
    return SearchSpace(
        family=FAMILY,
        params=params,
        rules=RULES,
        shape_rules=SHAPE_RULES,
        normalisers=(_normalise_runtime,),
        blocks=BLOCKS,
        shape_knobs=("splits", "decomposition", "reduction"),
        description="CUTLASS 3.x CollectiveBuilder GEMM for sm_90a (TMA + WGMMA, warp-specialised)",
    )
