"""One-wave seeds (`population.wave_seeds`): tiles whose grid fills the most of the GPU's SMs in one wave,
timed in a shape's first round besides its other seeds (its screen grows by those found: evolve.py).

The vendor fits its tiles to the SM count this way (nvjet's 72x128, 144x128, 192x128 ... on 132 SMs), and the
hand-picked seeds and other shapes' halls often hold no such tile for a new shape. This is wave arithmetic: no
model is involved.

- `wave_fit_seeds`: sm90_lean 128 x N tiles, one consumer warpgroup, one CTA per tile (session 37).
- `cooperative_wave_seeds`: sm90_cutlass cooperative 128 x N and 256 x N tiles with the persistent scheduler,
  which runs one tile per CTA where the tiles are no more than the SMs; they hold up to twice the accumulators
  of one warpgroup, so they give one wave where the rows of 128-row tiles are too many for any tile N one
  warpgroup holds (1792^3, 1152x3072x2048, 2048^3). The engine takes them where sm90_lean gave fewer than it
  asks (`population.wave_cooperative`).
"""

from __future__ import annotations

from typing import Any, Iterable

from genome import Genome, Problem, SearchSpace
from genome.sm90_cutlass_space import GMMA_BASE_N

WAVE_FAMILY = "sm90_lean"  # the one-wave seeds' family (population.wave_seeds): one CTA per tile
WAVE_TILE_M = 128       # their tile M
WAVE_ORIGIN = "seed_wave"  # their origin: the first round takes them on top of the other seeds
COOPERATIVE_FAMILY = "sm90_cutlass"   # the cooperative one-wave seeds' family
COOPERATIVE_TILE_M = (128, 256)       # their tile M: two consumer warpgroups of 64 or 128 rows
# a cooperative one-wave tile busies at least this share of the SMs: below it the shape is split-K's or a
# small tile's (two 256-row tiles at 64x64x4096 are no seed)
COOPERATIVE_MIN_FILL = 0.5


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _valid(space: SearchSpace, problem: Problem, params: dict) -> "Genome | None":
    """The genome of `params` in `space` if it is valid for `problem`."""
    try:
        return space.validate(Genome.make(space.family, space.canonical(params)), problem)
    except ValueError:
        return None


def _first(made: Iterable[tuple["Genome | None", str]], count: int,
           taken: "set[str] | None") -> list[tuple[Genome, str, str]]:
    """The first `count` (genome, note) of `made` whose genome is valid (not None) and in neither `taken` nor an
    earlier one, as one-wave seeds (`made` is drawn lazily: no genome past the last one taken is made)."""
    out: list[tuple[Genome, str, str]] = []
    seen = set(taken or ())
    for genome, note in made:
        if len(out) == count:
            break
        if genome is not None and genome.id not in seen:
            seen.add(genome.id)
            out.append((genome, WAVE_ORIGIN, note))
    return out


def wave_fit_seeds(problem: Problem, space: SearchSpace, n_sms: int, count: int,
                   taken: "set[str] | None" = None) -> list[tuple[Genome, str, str]]:
    """Up to `count` genomes of `space` (a family with one CTA per tile: sm90_lean) with 128 x N tiles, tile K 64,
    no cluster, automatic stages and every other parameter at its default: the tile N (of the space's choices)
    whose grid of ceil(M / 128) x ceil(N / tile N) CTAs fills the most of `n_sms` SMs in one wave first, then
    the next; each valid for `problem`, none in `taken`. 1664^3: 13 x 10 tiles of 128 x 176 ran 1.17x faster
    than the first round's best on the H200 (docs/results/h200-first-round-picks)."""
    if count <= 0 or "tile_n" not in space.names:
        return []
    tiles_m = _ceil(problem.m, WAVE_TILE_M)
    grids = ((tiles_m * _ceil(problem.n, tile_n), tile_n) for tile_n in space.spec("tile_n").choices)
    fits = sorted((-ctas, tile_n) for ctas, tile_n in grids if ctas <= n_sms)
    base = dict(space.default_params(), tile_m=WAVE_TILE_M, tile_k=64, cluster_m=1, cluster_n=1, stages=0)
    return _first(((_valid(space, problem, dict(base, tile_n=tile_n)),
                    f"{WAVE_TILE_M}x{tile_n} tiles: {-neg_ctas} CTAs, one wave of {n_sms} SMs")
                   for neg_ctas, tile_n in fits), count, taken)


def _grid(problem: Problem, tile_m: int, tile_n: int, cluster: tuple[int, int]) -> int:
    """The CTAs of a grid of tile_m x tile_n tiles, each dimension rounded up to whole clusters."""
    rows, cols = _ceil(problem.m, tile_m), _ceil(problem.n, tile_n)
    return _ceil(rows, cluster[0]) * cluster[0] * _ceil(cols, cluster[1]) * cluster[1]


def _pair_cluster(tiles_m: int, tiles_n: int) -> tuple[int, int]:
    """A cluster of two CTAs along a dimension whose tile count is even (N first: the pair shares its A tile),
    else none. On the H200 a cluster of two was 2.3-4.9% faster than none for the cooperative one-wave tiles the
    campaigns kept (128x224 at 128x28672x4096, 128x192 at 256x12288x4096, 256x128 at 2048^3)."""
    if tiles_n % 2 == 0:
        return 1, 2
    if tiles_m % 2 == 0:
        return 2, 1
    return 1, 1


def cooperative_wave_seeds(problem: Problem, space: SearchSpace, n_sms: int, count: int,
                           taken: "set[str] | None" = None) -> list[tuple[Genome, str, str]]:
    """Up to `count` genomes of `space` (sm90_cutlass) with the cooperative schedule and the persistent
    scheduler, tile M 128 or 256, tile K 64, automatic stages, a cluster of two where a tile count is even
    (`_pair_cluster`) and every other parameter at its default: the tile whose grid (rounded up to whole
    clusters) fills the most of `n_sms` SMs in one wave first, then the next, at least `COOPERATIVE_MIN_FILL`
    of them busy; on a tie the tile of a base WGMMA width, then the taller one. Each valid for `problem` (with
    no cluster where the pair is not), none in `taken`."""
    if count <= 0 or not {"tile_m", "tile_n", "schedule"} <= set(space.names):
        return []
    candidates = []
    for tile_m in (m for m in space.spec("tile_m").choices if m in COOPERATIVE_TILE_M):
        for tile_n in space.spec("tile_n").choices:
            cluster = _pair_cluster(_ceil(problem.m, tile_m), _ceil(problem.n, tile_n))
            ctas = _grid(problem, tile_m, tile_n, cluster)
            if COOPERATIVE_MIN_FILL * n_sms <= ctas <= n_sms:
                candidates.append((-ctas, tile_n not in GMMA_BASE_N, -tile_m, tile_n, cluster))
    base = dict(space.default_params(), schedule="cooperative", scheduler="persistent", tile_k=64, stages=0)

    def made(tile_m: int, tile_n: int, cluster: tuple[int, int]) -> "tuple[Genome | None, str]":
        tile = dict(base, tile_m=tile_m, tile_n=tile_n)
        genome = _valid(space, problem, dict(tile, cluster_m=cluster[0], cluster_n=cluster[1])) \
            or _valid(space, problem, dict(tile, cluster_m=1, cluster_n=1))   # the pair where it is valid
        if genome is None:
            return None, ""
        cm, cn = genome.get("cluster_m"), genome.get("cluster_n")
        grid = _grid(problem, tile_m, tile_n, (cm, cn))
        return genome, f"cooperative {tile_m}x{tile_n} tiles, cluster {cm}x{cn}: {grid} CTAs, one wave of {n_sms} SMs"

    return _first((made(-neg_m, tile_n, cluster) for _, _, neg_m, tile_n, cluster in sorted(candidates)),
                  count, taken)


def one_wave_seeds(problem: Problem, spaces: Iterable[SearchSpace], n_sms: int, count: int, taken: "set[str]",
                   cooperative: bool = True) -> list[tuple[Genome, str, str]]:
    """A shape's one-wave seeds: up to `count` of sm90_lean's (`wave_fit_seeds`) where the shape's families include
    it, and, with `cooperative`, sm90_cutlass's cooperative ones (`cooperative_wave_seeds`) for the slots left."""
    by_family: dict[str, Any] = {s.family: s for s in spaces}
    out: list[tuple[Genome, str, str]] = []
    if WAVE_FAMILY in by_family:
        out += wave_fit_seeds(problem, by_family[WAVE_FAMILY], n_sms, count, taken)
    if cooperative and len(out) < count and COOPERATIVE_FAMILY in by_family:
        out += cooperative_wave_seeds(problem, by_family[COOPERATIVE_FAMILY], n_sms, count - len(out),
                                      set(taken) | {g.id for g, _, _ in out})
    return out
