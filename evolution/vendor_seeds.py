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

Since revision 2 (a campaign's `vendor_mirrors_revision`, evolution/campaign_spaces.py; session 49):
- a tile a family's rules hold only with the cooperative schedule split along N (the rule `tile-m-wg-split`:
  sm90_cutlass's tile M of 192, 320 or 448, so sm90_swapab's 320 along N for the vendor's 320x128 at 8192^3) is
  mirrored with that schedule (`WIDE_TILE_SETTINGS`) where the base's own schedule cannot hold it; before, the
  repair shrank the tile and the family took no mirror. Not yet timed: such mirrors pass the space's rules;
- a mirror with a cluster whose grid has at least a wave of work tiles (`grid_ctas`, against the seed device's SM
  count) is followed by its twin without the cluster (`unclustered_twin`), within the count: it takes the place of
  the next mirror (another family's, which never beat the first in the measurement below). Measured with the
  H100's vendor picks on an H200 (docs/results/mirror-bases): the twin was the faster at the three shapes whose
  grid was two or more waves (8192x8192x1024 +3.4%, 4096x1024x1024 +2.3%, 2048^3 +0.5%) and at 3072x1024x2048,
  0.97 of a wave (+0.5%, no twin by this rule); it tied at 256x12288x4096 (0.97) and lost under that (1000^3
  -20%, 768^3 -3%, 1280^3 -2%).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from evaluator.cublaslt import describe_algo
from evaluator.cublaslt_enums import CLUSTERS, STAGES, TILES
from genome import Genome, Problem, SearchSpace
from genome.sm90_cutlass_space import TILE_M_WG_SPLIT_RULE
from genome.space import nearest_choice

from .campaign_spaces import VENDOR_MIRRORS_REVISION

VENDOR_ORIGIN = "seed_vendor"   # their origin: the first round takes them on top of the other seeds
TILE_TOLERANCE = 0.25           # a family's tile extent at most this far (relative) from the vendor's
SPLIT_KNOBS = ("ksplit", "splits")   # the split-K parameters of the families, the first one a space has wins
# how a family holds a tile M of 192, 320 or 448 (sm90_cutlass_space's rule TILE_M_WG_SPLIT_RULE): tried where a
# base's own schedule cannot (revision 2)
WIDE_TILE_SETTINGS = {"schedule": "cooperative", "wg_split": "n"}
TILE_KEYS = ("tile_m", "tile_n", "cluster_m", "cluster_n")


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


def _attempts(params: dict[str, Any], space: SearchSpace, revision: int) -> list[dict[str, Any]]:
    """The mirror's parameters as they are, and since revision 2 also with `WIDE_TILE_SETTINGS` where the space's
    rule `TILE_M_WG_SPLIT_RULE` refuses them (a tile M the base's schedule cannot hold) and the space has those
    settings."""
    out = [params]
    specs = {p.name: p for p in space.params}
    wide = next((r for r in space.rules if r.name == TILE_M_WG_SPLIT_RULE), None)
    if revision >= 2 and wide is not None and wide.check(params) is not None and \
            all(k in specs and v in specs[k].choices for k, v in WIDE_TILE_SETTINGS.items()):
        out.append({**params, **WIDE_TILE_SETTINGS})
    return out


def _valid_keeping(params: Mapping[str, Any], kept: Sequence[str], space: SearchSpace, problem: Problem,
                   seed: int) -> "Genome | None":
    """The genome of `params` repaired and valid at `problem`, None where it is not or the repair changed any of
    `kept`."""
    try:
        genome = space.repair(Genome.make(space.family, space.canonical(dict(params))), random.Random(seed))
        genome = space.validate(genome, problem)
    except ValueError:
        return None
    return genome if all(genome.get(k) == params[k] for k in kept) else None


def _kept(params: Mapping[str, Any]) -> tuple[str, ...]:
    """What a mirror keeps of the vendor's: tile, cluster, and the split-K parameters it set."""
    return TILE_KEYS + tuple(k for k in SPLIT_KNOBS + ("decomposition", "scheduler") if k in params)


def mirror(pick: VendorPick, space: SearchSpace, problem: Problem, handpicked: Sequence[Mapping[str, Any]],
           seed: int = 0, price: "Callable[[Genome], float] | None" = None,
           revision: int = VENDOR_MIRRORS_REVISION) -> "Genome | None":
    """The genome of `space` that mirrors `pick` at `problem`, valid there, with the pick's tile, cluster and
    split-K as mirrored (a repair may change other parameters, never those); None where the family cannot. Its
    other parameters (schedule, epilogue, ...) are those of the nearest hand-picked seed in tile, or with `price`
    (e.g. the family's simulator model: seeding.model_order) those of whichever hand-picked seed gives the
    mirror it prices fastest. `revision`: the campaign's (module docstring)."""
    made: list[Genome] = []
    for base in _bases(space, handpicked, pick):
        params = _mirror_params(pick, space, base)
        if params is None:
            return None              # the pick's tile, cluster or split: no base changes that
        for attempt in _attempts(params, space, revision):
            genome = _valid_keeping(attempt, _kept(attempt), space, problem, seed)
            if genome is None:
                continue
            if price is None:
                return genome
            made.append(genome)
            break
    return min(made, key=price) if made else None    # min keeps the nearer base on a tie


def grid_ctas(genome: Genome, space: SearchSpace, problem: Problem) -> int:
    """The work tiles of a mirror at `problem` (a genome with tile_m and tile_n): its tiles along the axes its tile
    walks, times its split of K. A persistent kernel launches at most the SMs' worth of CTAs for them; clusters'
    rounding is left out."""
    extent = {"m": problem.m, "n": problem.n}
    axis_m, axis_n = space.tile_axes
    tiles = math.ceil(extent[axis_m] / genome.get("tile_m")) * math.ceil(extent[axis_n] / genome.get("tile_n"))
    split = next((int(genome.get(k)) for k in SPLIT_KNOBS if genome.get(k) is not None), 1)
    return tiles * max(1, split)


def unclustered_twin(genome: Genome, space: SearchSpace, problem: Problem, n_sms: int,
                     seed: int = 0) -> "Genome | None":
    """`genome` (a mirror) with a 1x1 cluster where it has a larger one and at least `n_sms` work tiles (a wave;
    `grid_ctas`), valid at `problem` with the same tile and split; else None."""
    if genome.get("cluster_m", 1) * genome.get("cluster_n", 1) == 1 or grid_ctas(genome, space, problem) < n_sms:
        return None
    params = {**genome.param_dict, "cluster_m": 1, "cluster_n": 1}
    return _valid_keeping(params, _kept(params), space, problem, seed)


def vendor_seeds(problem: Problem, spaces: Iterable[SearchSpace], algorithms: Mapping[str, Mapping[str, int]],
                 device_us: Mapping[str, float], handpicked: Sequence[Mapping[str, Any]], count: int,
                 taken: "set[str]", seed: int = 0, price: "Callable[[Genome], float] | None" = None,
                 revision: int = VENDOR_MIRRORS_REVISION, n_sms: int = 132) -> list[tuple[Genome, str, str]]:
    """Up to `count` mirrors of the vendor's picks at `problem` as (genome, VENDOR_ORIGIN, note): the fastest
    cuBLASLt baseline's pick first, in each of `spaces` that can hold it, the one whose tile comes nearest first
    (`tile_error`; on ties the one with the vendor's wgmma M along its tile M, `wgmma_axis_mismatch`, then the
    spaces' order), since revision 2 each followed by its `unclustered_twin` on a device of `n_sms` SMs (a
    campaign's seed device: the simulated H200's 132, as for its one-wave seeds), none in `taken` or twice;
    `price`: see `mirror`."""
    spaces = list(spaces)
    out: list[tuple[Genome, str, str]] = []
    seen = set(taken)

    def add(genome: Genome, note: str) -> None:
        seen.add(genome.id)
        out.append((genome, VENDOR_ORIGIN, note))

    for pick in vendor_picks(algorithms, device_us):
        ranked = sorted((tile_error(pick, sp), wgmma_axis_mismatch(pick, sp), i) for i, sp in enumerate(spaces))
        for space in (spaces[i] for _, _, i in ranked):
            if len(out) >= count:
                return out[:count]
            genome = mirror(pick, space, problem, handpicked, seed, price, revision)
            if genome is None or genome.id in seen:
                continue
            what = f"mirrors {pick.baseline}'s algorithm ({pick.what}): {space.family} " \
                   f"{genome.get('tile_m')}x{genome.get('tile_n')}"
            split = f", split-K {pick.splitk}" if pick.splitk > 1 else ""
            add(genome, f"{what}, cluster {genome.get('cluster_m')}x{genome.get('cluster_n')}{split}")
            twin = unclustered_twin(genome, space, problem, n_sms, seed) if revision >= 2 else None
            if twin is not None and twin.id not in seen:
                add(twin, f"{what}, cluster 1x1 for the mirror's {genome.get('cluster_m')}x"
                          f"{genome.get('cluster_n')}{split}: {grid_ctas(twin, space, problem)} work tiles, at "
                          f"least a wave of {n_sms} SMs")
    return out[:count]
