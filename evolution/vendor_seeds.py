"""Vendor-mirror seeds (`population.vendor_seeds`): genomes of the campaign's families with the CTA tile, cluster
and split-K of the algorithm cuBLASLt itself picked for the shape, timed in the shape's first round besides its
other seeds (its screen grows by those found: evolve.py).

A GPU campaign measures the vendor baselines of a shape before it searches it, and the cuBLASLt baselines record
what their algorithm is (`BaselineSet.algorithms`: evaluator.cublaslt.LtPlan.algo_config). On Hopper that is a
CUTLASS-like warp-specialised kernel whose tile the vendor fits to the shape and the SM count (72x128 in a 2x4
cluster at 1000^3, 112x128 in 4x2 at 1280^3: docs/results/h100-vendor-algos), which the hand-picked seeds and
other shapes' halls often hold nothing near. A mirror starts the search where the vendor stands; the search is
then to beat it. The tile, cluster and split-K are the vendor's; a model at most chooses the rest (below). A
simulated campaign has no algorithms to mirror.

Reading an algorithm (cublasLt.h): its tile is rows x columns of the column-major C^T it computes, so N x M of
the problem, and so is its cluster shape (AUTO, id 0, is read as no cluster: a guess). A family takes a pick when
its tile values come within `TILE_TOLERANCE` of the vendor's extents along the axes its tile walks (`tile_axes`:
(M, N) for most, (N, M) for sm90_swapab) and it has exactly the vendor's cluster and split-K (or none where the
vendor has none). Of the families that take a pick, the one whose tile comes nearest goes first; on a tie, the one
whose tile M lies along the vendor's wgmma M (its extent that is a multiple of 64, where only one is).
The other parameters (schedule, epilogue, ...) come from one of the family's hand-picked seeds: the one that gives
the mirror its simulator model prices fastest at the shape (a campaign's mirrors), or the nearest in tile (no
model given). They are a base only: the seeds' files are read whether or not `population.handpicked` puts them in
the population.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from evaluator.cublaslt import describe_algo
from evaluator.cublaslt_enums import CLUSTERS, STAGES, TILES
from genome import Genome, Problem, SearchSpace
from genome.space import nearest_choice

VENDOR_ORIGIN = "seed_vendor"   # their origin: the first round takes them on top of the other seeds
TILE_TOLERANCE = 0.25           # a family's tile extent at most this far (relative) from the vendor's
SPLIT_KNOBS = ("ksplit", "splits")   # the split-K parameters of the families, the first one a space has wins


@dataclass(frozen=True)
class VendorPick:
    """What one cuBLASLt algorithm is, in the problem's terms."""

    baseline: str        # the vendor baseline that ran it (e.g. cublaslt_autotuned)
    along_m: int         # CTA tile extent along the problem's M
    along_n: int         # ... along N
    cluster_m: int       # CTAs a cluster along M
    cluster_n: int       # ... along N
    splitk: int          # K split into this many parts (1: none)
    what: str            # describe_algo's reading of its ids
    tile_k: int = 0      # K a stage (0: not said)
    stages: int = 0      # stages of the mainloop (0: as many as fit, or not said)

    @classmethod
    def read(cls, baseline: str, config: Mapping[str, int]) -> "VendorPick | None":
        """The pick of LtPlan.algo_config's ids; None where the tile or cluster id is not a named one (a cluster id
        not reported: AUTO)."""
        tile, cluster_id = config.get("tile_id"), config.get("cluster_shape_id", 0)
        if not isinstance(tile, int) or not 0 < tile < len(TILES) or cluster_id not in CLUSTERS:
            return None
        along_n, along_m = (int(x) for x in TILES[tile].split("x"))
        cluster = CLUSTERS[cluster_id]
        cluster_n, cluster_m = (1, 1) if cluster == "auto" else (int(x) for x in cluster.split("x")[:2])
        splitk = max(1, int(config.get("splitk") or 1))
        depth, count = (STAGES.get(config.get("stages_id", 0)) or "0x0").split("x")
        return cls(baseline, along_m, along_n, cluster_m, cluster_n, splitk, describe_algo(dict(config)),
                   tile_k=int(depth), stages=int(count) if count.isdigit() else 0)


def vendor_picks(algorithms: Mapping[str, Mapping[str, int]], device_us: Mapping[str, float]) -> list[VendorPick]:
    """The cuBLASLt baselines' algorithms as picks, the fastest baseline's first (`device_us`: each baseline's
    time; one without a time goes last), each distinct pick once."""
    order = sorted(algorithms, key=lambda name: (math.inf if device_us.get(name) is None else device_us[name], name))
    out: list[VendorPick] = []
    for name in order:
        pick = VendorPick.read(name, algorithms[name])
        if pick is not None and all(_key(pick) != _key(p) for p in out):
            out.append(pick)
    return out


def _key(pick: VendorPick) -> tuple:
    return pick.along_m, pick.along_n, pick.cluster_m, pick.cluster_n, pick.splitk, pick.tile_k, pick.stages


def _along_axes(pick: VendorPick, space: SearchSpace) -> tuple[tuple[int, int], tuple[int, int]]:
    """The pick's (tile, cluster) extents along the axes `space`'s tile_m and tile_n walk (its `tile_axes`)."""
    tile = {"m": pick.along_m, "n": pick.along_n}
    cluster = {"m": pick.cluster_m, "n": pick.cluster_n}
    axis_m, axis_n = space.tile_axes
    return (tile[axis_m], tile[axis_n]), (cluster[axis_m], cluster[axis_n])


def _mirror_params(pick: VendorPick, space: SearchSpace, base: Mapping[str, Any]) -> "dict[str, Any] | None":
    """`base` with the pick's tile, cluster and split-K in `space`'s terms; None where the space cannot hold them."""
    specs = {p.name: p for p in space.params}
    if not {"tile_m", "tile_n", "cluster_m", "cluster_n"} <= set(specs):
        return None
    tiles, clusters = _along_axes(pick, space)
    params = dict(base)
    for name, want in zip(("tile_m", "tile_n"), tiles):
        got = nearest_choice(specs[name], want, larger_on_tie=True)   # a tie: the tile that covers the vendor's
        if abs(got - want) > TILE_TOLERANCE * want:
            return None
        params[name] = got
    for name, want in zip(("cluster_m", "cluster_n"), clusters):
        if want not in specs[name].choices:
            return None
        params[name] = want
    if pick.tile_k and pick.tile_k in getattr(specs.get("tile_k"), "choices", ()):
        params["tile_k"] = pick.tile_k
    if "stages" in specs:   # the vendor's count where the space has it, else as many as fit (0)
        params["stages"] = pick.stages if pick.stages in specs["stages"].choices else 0
    knob = next((k for k in SPLIT_KNOBS if k in specs), None)
    if pick.splitk > 1:
        if knob is None or pick.splitk not in specs[knob].choices:
            return None
        params[knob] = pick.splitk
        if knob == "splits":   # CUTLASS's split-K: the stream-K scheduler's split_k decomposition
            decomposition, scheduler = specs.get("decomposition"), specs.get("scheduler")
            if decomposition is None or "split_k" not in decomposition.choices or scheduler is None or \
                    "streamk" not in scheduler.choices:
                return None
            params.update(decomposition="split_k", scheduler="streamk")
    elif knob is not None:
        if 1 not in specs[knob].choices:
            return None          # a family that always splits K (sm90_splitk)
        params[knob] = 1
        if "decomposition" in specs:
            params["decomposition"] = "heuristic"
        if "persistent" in getattr(specs.get("scheduler"), "choices", ()):
            params["scheduler"] = "persistent"    # one tile a CTA at a time, as the vendor without a split
    return params


def tile_error(pick: VendorPick, space: SearchSpace) -> float:
    """How far `space`'s nearest tile values are from the pick's extents: the sum of the two relative deviations
    (0: exact; a family without the tile parameters: infinite)."""
    specs = {p.name: p for p in space.params}
    if not {"tile_m", "tile_n"} <= set(specs):
        return math.inf
    return sum(abs(nearest_choice(specs[name], want, larger_on_tie=True) - want) / want
               for name, want in zip(("tile_m", "tile_n"), _along_axes(pick, space)[0]))


def wgmma_axis_mismatch(pick: VendorPick, space: SearchSpace) -> bool:
    """True where the vendor's wgmma M (its tile extent that is a multiple of 64, where only one is) lies along the
    axis `space`'s tile_n walks: the family tiles that axis with its wgmma N, a different kernel."""
    tile_m_extent, tile_n_extent = _along_axes(pick, space)[0]
    return tile_m_extent % 64 != 0 and tile_n_extent % 64 == 0


def _bases(space: SearchSpace, handpicked: Sequence[Mapping[str, Any]], pick: VendorPick) -> list[dict[str, Any]]:
    """Where a mirror's other parameters can come from: the family's hand-picked seeds, the one whose tile is
    nearest the pick's first (log distance; file order on ties), else the space's first values."""
    want = _along_axes(pick, space)[0]
    ranked = []
    for index, item in enumerate(handpicked):
        try:
            genome = Genome.from_dict(item["genome"])
        except (KeyError, ValueError, TypeError):
            continue
        tm, tn = genome.get("tile_m"), genome.get("tile_n")
        if genome.family != space.family or not isinstance(tm, int) or not isinstance(tn, int):
            continue
        ranked.append((abs(math.log2(tm / want[0])) + abs(math.log2(tn / want[1])), index, genome))
    return [dict(g.param_dict) for _, _, g in sorted(ranked, key=lambda t: t[:2])] or [space.default_params()]


def mirror(pick: VendorPick, space: SearchSpace, problem: Problem, handpicked: Sequence[Mapping[str, Any]],
           seed: int = 0, price: "Callable[[Genome], float] | None" = None) -> "Genome | None":
    """The genome of `space` that mirrors `pick` at `problem`, valid there, with the pick's tile, cluster and
    split-K as mirrored (a repair may change other parameters, never those); None where the family cannot. Its
    other parameters (schedule, epilogue, ...) are those of the nearest hand-picked seed in tile, or with `price`
    (e.g. the family's simulator model: seeding.model_order) those of whichever hand-picked seed gives the
    mirror it prices fastest."""
    made: list[Genome] = []
    for base in _bases(space, handpicked, pick):
        params = _mirror_params(pick, space, base)
        if params is None:
            return None              # the pick's tile, cluster or split: no base changes that
        try:
            genome = space.repair(Genome.make(space.family, space.canonical(params)), random.Random(seed))
            genome = space.validate(genome, problem)
        except ValueError:
            continue
        kept = ("tile_m", "tile_n", "cluster_m", "cluster_n") + tuple(
            k for k in SPLIT_KNOBS + ("decomposition", "scheduler") if k in params)
        if all(genome.get(k) == params[k] for k in kept):
            if price is None:
                return genome
            made.append(genome)
    return min(made, key=price) if made else None    # min keeps the nearer base on a tie


def vendor_seeds(problem: Problem, spaces: Iterable[SearchSpace], algorithms: Mapping[str, Mapping[str, int]],
                 device_us: Mapping[str, float], handpicked: Sequence[Mapping[str, Any]], count: int,
                 taken: "set[str]", seed: int = 0, price: "Callable[[Genome], float] | None" = None
                 ) -> list[tuple[Genome, str, str]]:
    """Up to `count` mirrors of the vendor's picks at `problem` as (genome, VENDOR_ORIGIN, note): the fastest
    cuBLASLt baseline's pick first, in each of `spaces` that can hold it, the one whose tile comes nearest first
    (`tile_error`; on ties the one with the vendor's wgmma M along its tile M, `wgmma_axis_mismatch`, then the
    spaces' order), none in `taken` or twice; `price`: see `mirror`."""
    spaces = list(spaces)
    out: list[tuple[Genome, str, str]] = []
    seen = set(taken)
    for pick in vendor_picks(algorithms, device_us):
        ranked = sorted((tile_error(pick, sp), wgmma_axis_mismatch(pick, sp), i) for i, sp in enumerate(spaces))
        for space in (spaces[i] for _, _, i in ranked):
            if len(out) == count:
                return out
            genome = mirror(pick, space, problem, handpicked, seed, price)
            if genome is None or genome.id in seen:
                continue
            seen.add(genome.id)
            out.append((genome, VENDOR_ORIGIN,
                        f"mirrors {pick.baseline}'s algorithm ({pick.what}): {space.family} "
                        f"{genome.get('tile_m')}x{genome.get('tile_n')}, cluster "
                        f"{genome.get('cluster_m')}x{genome.get('cluster_n')}"
                        + (f", split-K {pick.splitk}" if pick.splitk > 1 else "")))
    return out
