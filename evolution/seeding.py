"""Where a shape's first population comes from: halls of fame of the nearest solved shapes
(this campaign's and those of `seed_from` campaigns) and the seed genomes of each template
family (hand-picked) that fit the shape.

Distance between shapes is Euclidean in (log2 M, log2 N, log2 K). Seed pools read from other
folders are copied into the campaign database when the campaign is created, so a resume never
depends on files that may have changed since.
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from genome import Genome, Problem, SearchSpace
from templates import family_registry



def shape_distance(a: Problem, b: Problem) -> float:
    return math.sqrt(sum((math.log2(x) - math.log2(y)) ** 2 for x, y in ((a.m, b.m), (a.n, b.n), (a.k, b.k))))


def nearest_shapes(problem: Problem, solved: Iterable[str], k: int) -> list[tuple[str, float]]:
    """The k solved shapes nearest to `problem` (ties broken by name), nearest first."""
    out = []
    for name in solved:
        other = Problem.parse(name)
        out.append((name, shape_distance(problem, other)))
    out.sort(key=lambda t: (t[1], t[0]))
    return out[:k]


def fits(genome: Genome, problem: Problem, tile_axes: tuple[str, str] = ("m", "n")) -> bool:
    """A hand-picked genome fits a shape when its CTA tile is not much larger than the problem
    (a 256-row tile for M=16 wastes most of the tile). `tile_axes`: the problem dimensions tile_m
    and tile_n walk (its space's `tile_axes`; ("n", "m") for a family that computes C^T)."""
    tm, tn = genome.get("tile_m"), genome.get("tile_n")
    along_m, along_n = (getattr(problem, axis) for axis in tile_axes)
    if isinstance(tm, int) and tm > max(128, 2 * along_m):
        return False
    if isinstance(tn, int) and tn > max(64, 2 * along_n):
        return False
    return True


def load_handpicked(families: "Iterable[str]") -> list[dict[str, Any]]:
    """The seed genomes each of the campaign's template families ships (`TemplateFamily.seeds()`;
    names or plug-in import paths), as {name, genome} dicts, family by family, by file name."""
    registry = family_registry()
    return [{"name": name, "genome": genome.to_dict()}
            for fam in families for name, genome in registry.resolve(fam).seeds()]


def bench_result_file(path: "str | Path") -> "Path | None":
    """The bench.json an `evogemm bench` run wrote, given it or the folder holding it; else None."""
    path = Path(path)
    candidate = path / "bench.json" if path.is_dir() else path
    if candidate.suffix != ".json" or not candidate.is_file():
        return None
    try:
        data = json.loads(candidate.read_text())
    except (OSError, ValueError):
        return None
    return candidate if isinstance(data, dict) and isinstance(data.get("shapes"), list) else None


def _bench_pool(path: Path, per_shape: int) -> dict[str, list[dict[str, Any]]]:
    """problem -> [{genome, time_us}] fastest first: the kernels a bench measured that passed the gate."""
    pool: dict[str, list[dict[str, Any]]] = {}
    for shape in json.loads(path.read_text())["shapes"]:
        items = []
        for k in shape.get("kernels") or []:
            m = k.get("measurement") or {}
            us = (m.get("device") or {}).get("median_us")
            if m.get("status") != "ok" or us is None:
                continue
            try:
                items.append({"genome": Genome.from_dict(k["genome"]).to_dict(), "time_us": float(us)})
            except (KeyError, ValueError, TypeError):
                continue
        try:
            problem = Problem.parse(str(shape["problem"])).name
        except (KeyError, ValueError):
            continue
        if items:
            pool[problem] = sorted(items, key=lambda e: e["time_us"])[:per_shape]
    return pool


def read_seed_pool(campaign_dir: "str | Path", per_shape: int = 8) -> dict[str, list[dict[str, Any]]]:
    """problem -> [{genome, time_us}] best first, from a campaign folder's hall_of_fame/*.json,
    else from its campaign.db; or from an `evogemm bench` result (its bench.json, or the folder
    holding it): the kernels it measured that passed the gate, fastest first."""
    bench = bench_result_file(campaign_dir)
    if bench is not None:
        return _bench_pool(bench, per_shape)
    folder = Path(campaign_dir)
    pool: dict[str, list[dict[str, Any]]] = {}
    hof_dir = folder / "hall_of_fame"
    if hof_dir.is_dir():
        for path in sorted(hof_dir.glob("*.json")):
            try:
                entries = json.loads(path.read_text())
                problem = Problem.parse(path.stem).name
            except (ValueError, json.JSONDecodeError):
                continue
            items = []
            for e in entries[:per_shape]:
                try:
                    g = Genome.from_dict(e["genome"])
                except (KeyError, ValueError, TypeError):
                    continue
                device = (e.get("measurement") or {}).get("device") or {}
                items.append({"genome": g.to_dict(), "time_us": device.get("median_us")})
            if items:
                pool[problem] = items
    if not pool and (folder / "campaign.db").exists():
        conn = sqlite3.connect(f"file:{folder / 'campaign.db'}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT e.problem, e.device_us, g.json FROM evaluations e JOIN genomes g ON g.id = e.genome_id "
                "WHERE e.status='ok' AND e.device_us IS NOT NULL ORDER BY e.problem, e.device_us, e.genome_id")
            for problem, us, gjson in rows:
                items = pool.setdefault(problem, [])
                if len(items) < per_shape:
                    items.append({"genome": json.loads(gjson), "time_us": us})
        except sqlite3.DatabaseError as exc:
            raise sqlite3.DatabaseError(f"{folder / 'campaign.db'} is empty or not a campaign database ({exc})") from exc
        finally:
            conn.close()
    return pool


def lazy_model_order(problem: Problem, families: Any = None, device: Any = "h200") -> Callable[[Genome], float]:
    """`model_order(problem, families, device)`, made on its first call: a shape whose operators never
    price a genome loads no family model."""
    made: list[Callable[[Genome], float]] = []

    def key(genome: Genome) -> float:
        if not made:
            made.append(model_order(problem, families, device))
        return made[0](genome)
    return key


def model_order(problem: Problem, families: Any = None, device: Any = "h200") -> Callable[[Genome], float]:
    """A sort key for hand-picked genomes: the analytic simulator's time of the genome on
    `problem` (its family's model; a genome no model covers sorts last, in its file order).
    `families`: the campaign's family registry, plug-in families included (default: built-in).
    `device`: the simulated device (a name or a DeviceSpec: the campaign's, `seed_model_device`)."""
    from evaluator.simulator import SimulatedEvaluator
    sim = SimulatedEvaluator(families=families, device=device)

    def key(genome: Genome) -> float:
        try:
            return float(sim.predict_us(genome, problem))
        except Exception:  # noqa: BLE001 - no model, or a model that cannot price it: keep it, last
            return math.inf
    return key


KNOB_FIT_GAIN = 0.05   # a seed's shape knobs move only where the model prices the move this much faster
KNOB_FIT_COMBOS = 512  # more combinations of a family's shape knobs than this: one knob at a time


def fit_shape_knobs(genome: Genome, problem: Problem, space: SearchSpace, price: Callable[[Genome], float],
                    min_gain: float = KNOB_FIT_GAIN) -> Genome:
    """`genome` with its family's shape knobs (`space.shape_knobs`: runtime parameters that divide the
    work among CTAs, such as a split-K factor) set to the values `price` (the family's simulator
    model) finds fastest on `problem`, where that is at least `min_gain` faster than its own values;
    else `genome` unchanged. Only runtime parameters move, so the kernel binary is the same: a seed
    measured at another shape, or hand-picked with one shape in mind, is timed with the split this
    shape's wave count wants (a split of 8 that fills 128 SMs at 512x512 makes 200 CTAs at 640x640)."""
    specs = [space.spec(name) for name in space.shape_knobs]
    if not specs:
        return genome
    base = price(genome)
    if not math.isfinite(base):
        return genome
    best, best_t = genome, base

    def consider(values: Mapping[str, Any]) -> None:
        nonlocal best, best_t
        try:
            candidate = space.validate(Genome.make(genome.family, {**best.param_dict, **values}, genome.patches),
                                       problem)
        except ValueError:
            return
        t = price(candidate)
        if t < best_t:
            best, best_t = candidate, t

    if math.prod(len(spec.choices) for spec in specs) <= KNOB_FIT_COMBOS:
        for combo in itertools.product(*(spec.choices for spec in specs)):
            consider(dict(zip((spec.name for spec in specs), combo)))
    else:
        for spec in specs:
            for value in spec.choices:
                consider({spec.name: value})
    return best if best_t < (1.0 - min_gain) * base else genome


def knob_changes(before: Genome, after: Genome) -> str:
    """'ksplit 8->4, ...': the parameters that differ between two genomes of one family."""
    a, b = before.param_dict, after.param_dict
    return ", ".join(f"{k} {a.get(k)}->{b[k]}" for k in sorted(b) if a.get(k) != b[k])


def prune_families(spaces: Sequence[SearchSpace], problem: Problem, handpicked: Sequence[Mapping[str, Any]],
                   ratio: float, order: "Callable[[Genome], float] | None" = None, fit_knobs: bool = False
                   ) -> "tuple[list[SearchSpace], list[tuple[str, float, float]]]":
    """The families worth searching on `problem`: those whose fastest valid hand-picked seed, by
    `order` (default the simulator, `model_order(problem)`), is within `ratio` times the fastest
    family's; with `fit_knobs`, each seed priced with its shape knobs fitted (`fit_shape_knobs`), as
    the seeds are taken. A family with no valid hand-picked seed or no price is kept (nothing says it
    is slow). Returns (kept spaces, [(family, its best price, the best price)] of those left out)."""
    rank = order or model_order(problem)
    best: dict[str, float] = {}
    for space in spaces:
        prices = []
        for item in handpicked:
            try:
                genome = Genome.from_dict(item["genome"])
            except (KeyError, ValueError, TypeError):
                continue
            if genome.family == space.family and fits(genome, problem, space.tile_axes) and \
                    space.is_valid(genome, problem):
                genome = space.normalise(genome)
                if fit_knobs:
                    genome = fit_shape_knobs(genome, problem, space, rank)
                prices.append(rank(genome))
        finite = [p for p in prices if math.isfinite(p)]
        if finite:
            best[space.family] = min(finite)
    if not best:
        return list(spaces), []
    floor = min(best.values())
    kept = [s for s in spaces if best.get(s.family, floor) <= ratio * floor]
    dropped = [(s.family, best[s.family], floor) for s in spaces if s not in kept]
    return kept, dropped


GENERALIST_SHARPNESS = 8.0   # credit (fastest time / its time) ** 8: 1 at the best, 0.68 at 5% slower, 0.23 at 20%


def generalist_scores(problem: Problem, external: Mapping[str, Sequence[Mapping[str, Any]]]
                      ) -> list[tuple[float, Genome, int]]:
    """Genomes of measured seed pools (shape -> [{genome, time_us}]) ranked as generalists for
    `problem`, best first, as (score, genome, shapes): at every other shape a genome earns
    (the shape's fastest time / its time) ** GENERALIST_SHARPNESS, weighted 1 / (1 + distance) to
    `problem`: a kernel that came near the best at many shapes, nearer ones counting more.
    Leave-one-shape-out on the 28 public shapes with H200 measurements, a first population whose
    first seed from other shapes is the family's generalist (`population.seed_generalist`) held a
    faster measured seed at 7 shapes and a slower one at 4 than the nearest shapes' heads did
    (geomean 0.961x against 0.950x; docs/results/h200-unseen-campaign/seed-kb-crossval.log): a
    small gain, not yet measured in a GPU campaign, so it is off by default."""
    score: dict[str, float] = {}
    genomes: dict[str, Genome] = {}
    shapes: dict[str, int] = {}
    for name, items in external.items():
        if name == problem.name:
            continue
        timed = []
        for item in items:
            us = item.get("time_us")
            try:
                genome = Genome.from_dict(item["genome"])
            except (KeyError, ValueError, TypeError):
                continue
            if isinstance(us, (int, float)) and us > 0:
                timed.append((genome, float(us)))
        if not timed:
            continue
        fastest = min(us for _, us in timed)
        weight = 1.0 / (1.0 + shape_distance(problem, Problem.parse(name)))
        best_here: dict[str, float] = {}
        for genome, us in timed:  # a genome measured twice at a shape counts once, at its best
            best_here[genome.id] = min(us, best_here.get(genome.id, math.inf))
            genomes[genome.id] = genome
        for gid, us in best_here.items():
            score[gid] = score.get(gid, 0.0) + weight * (fastest / us) ** GENERALIST_SHARPNESS
            shapes[gid] = shapes.get(gid, 0) + 1
    return sorted(((sc, genomes[gid], shapes[gid]) for gid, sc in score.items()), key=lambda t: (-t[0], t[1].id))


def seeds_for(problem: Problem, space: SearchSpace, solved: Mapping[str, Sequence[Genome]],
              external: Mapping[str, Sequence[Mapping[str, Any]]], handpicked: Sequence[Mapping[str, Any]],
              k_shapes: int, limit: int, order: "Callable[[Genome], float] | None" = None,
              generalist: bool = False, fit: "Callable[[Genome], Genome] | None" = None
              ) -> list[tuple[Genome, str, str]]:
    """Up to `limit` distinct genomes valid for `problem`, as (genome, origin, note): the halls of
    fame of the nearest solved shapes (this campaign's first on ties) and, alternating with them
    from the head of the list, hand-picked ones (at least a quarter of the slots where there are
    both), the hand-picked ones ordered by `order` (default `model_order(problem)`: the family's
    simulator model, so that a small population starts from the seeds the model prices fastest
    for this shape rather than from the first files), stable on ties. With `generalist`, the
    family's best generalist of the measured pools (`generalist_scores`) leads the genomes from
    other shapes. With `fit` (e.g. `fit_shape_knobs` bound to the shape and the model), every seed
    is taken with its shape knobs as `fit` sets them, and its note says what moved, except those
    measured at this very shape (a `seed_from` result or an earlier run of it): their knobs stand."""
    seen: set[str] = set()
    moved: dict[str, str] = {}
    measured_here: set[str] = set()   # genomes measured at this very shape: their knobs stand
    for item in external.get(problem.name, ()):
        try:
            measured_here.add(space.validate(Genome.from_dict(item["genome"]), problem).id)
        except (KeyError, ValueError, TypeError):
            continue

    def valid(genome: Genome) -> "Genome | None":
        if genome.family != space.family:
            return None
        try:
            genome = space.validate(genome, problem)
        except ValueError:
            return None
        change = ""
        if fit is not None and genome.id not in measured_here:
            fitted = fit(genome)
            if fitted.id in measured_here:
                return None   # it is a genome measured here: it comes with its own origin and rank
            if fitted.id != genome.id:
                change, genome = knob_changes(genome, fitted), fitted
        if genome.id in seen:
            return None
        seen.add(genome.id)
        if change:
            moved[genome.id] = change
        return genome

    def noted(item: tuple[Genome, str, str]) -> tuple[Genome, str, str]:
        genome, origin, note = item
        return (genome, origin, f"{note}; knobs fitted to the shape: {moved[genome.id]}") if genome.id in moved \
            else item

    pools: dict[str, list[tuple[Genome, str]]] = {}
    for name, genomes in solved.items():
        if name != problem.name:
            pools.setdefault(name, []).extend((g, "seed_nearest") for g in genomes)
    for name, items in external.items():
        for item in items:
            try:
                pools.setdefault(name, []).append((Genome.from_dict(item["genome"]), "seed_from"))
            except (KeyError, ValueError, TypeError):
                continue
    near_seeds: list[tuple[Genome, str, str]] = []
    if generalist and external:
        for score, genome, n_shapes in generalist_scores(problem, external):
            g = valid(genome)
            if g is not None:
                near_seeds.append((g, "seed_from", f"generalist of the measured shapes (score {score:.2f} "
                                                   f"over {n_shapes} shapes)"))
                break
    if k_shapes > 0 and pools:
        near = nearest_shapes(problem, pools, k_shapes)
        # interleave: best of each near shape, then second best, ...
        depth = max(len(pools[name]) for name, _ in near)
        for rank in range(depth):
            for name, dist in near:
                if rank < len(pools[name]):
                    genome, origin = pools[name][rank]
                    g = valid(genome)
                    if g is not None:
                        near_seeds.append((g, origin, f"hall of fame #{rank + 1} of {name} (distance {dist:.2f})"))
    picked: list[tuple[Genome, str, str]] = []
    for item in handpicked:
        try:
            genome = Genome.from_dict(item["genome"])
        except (KeyError, ValueError, TypeError):
            continue
        if fits(genome, problem, space.tile_axes):
            g = valid(genome)
            if g is not None:
                picked.append((g, "handpicked", f"hand-picked {item.get('name', g.id)}"))
    rank = order or model_order(problem)
    picked.sort(key=lambda item: rank(item[0]))
    # a quarter of the seed slots, and at least one where there are two, is kept for hand-picked
    # genomes when there are both kinds, and the two kinds alternate at the head of the list: an
    # island takes its family's first seeds, and a small one (2 per family) that took the nearest
    # shapes' halls of fame first never tried the seed its model prices fastest for this shape (on
    # the H200, 8192x8192x1024 started from a skinny shape's 64x64 and 128x64 tiles: 0.63x)
    reserve = min(len(picked), max(limit // 4, 1 if limit >= 2 else 0)) if near_seeds else len(picked)
    near_part = near_seeds[:max(0, limit - reserve)]
    picked_part = picked[:max(0, limit - len(near_part))]
    out = [item for pair in zip(near_part, picked_part) for item in pair]
    short = min(len(near_part), len(picked_part))
    out += near_part[short:] + picked_part[short:]
    if len(out) < limit:  # room left: more of the nearest shapes' genomes
        out += near_seeds[len(near_part):][:limit - len(out)]
    return [noted(item) for item in out]
