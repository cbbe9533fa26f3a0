"""Individuals, fitness, islands and the per-shape hall of fame, on DEAP.

No `deap.creator` (it creates global classes): `GemmFitness` is a `deap.base.Fitness` subclass
defined here (weights=(1.0,), higher is better) and `Individual` is a plain class that carries a
genome, its measurement and a fitness, which is all `deap.tools.HallOfFame`, `selBest` and
`selWorst` need.

Fitness = log(best vendor time / kernel time): 0 is "as fast as the best of cuBLAS/cuBLASLt",
positive is faster. A failed kernel has no fitness and never enters a population or a hall of fame.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from deap import base, tools

from evaluator.api import Measurement
from genome import Genome


class GemmFitness(base.Fitness):
    """One objective, maximised: log speedup over the best vendor baseline."""

    weights = (1.0,)


def fitness_value(measurement: Measurement, best_vendor_us: "float | None") -> "float | None":
    """log(best vendor / time) for a successful measurement, else None. Without baselines the
    reference is 1 us (so fitness = -log(time in us)): the order is the same."""
    if not measurement.ok or not measurement.time_us or measurement.time_us <= 0:
        return None
    ref = best_vendor_us if best_vendor_us and best_vendor_us > 0 else 1.0
    return math.log(ref / measurement.time_us)


class Individual:
    """A measured genome: what populations, selection and the hall of fame hold."""

    __slots__ = ("genome", "measurement", "fitness", "origin")

    def __init__(self, genome: Genome, measurement: Measurement, fitness: float, origin: str = ""):
        self.genome = genome
        self.measurement = measurement
        self.fitness = GemmFitness((float(fitness),))
        self.origin = origin

    @property
    def id(self) -> str:
        return self.genome.id

    @property
    def time_us(self) -> float:
        assert self.measurement.time_us is not None
        return self.measurement.time_us

    @property
    def value(self) -> float:
        return float(self.fitness.values[0])

    def __deepcopy__(self, memo: dict) -> "Individual":  # genome and measurement are never mutated
        return Individual(self.genome, self.measurement, self.value, self.origin)

    def __repr__(self) -> str:
        return f"Individual({self.genome.id}, {self.time_us:.2f} us, fitness {self.value:+.4f})"


def same_genome(a: Individual, b: Individual) -> bool:
    return a.genome.id == b.genome.id


def make_hall_of_fame(size: int) -> tools.HallOfFame:
    """A DEAP hall of fame that keeps one entry per genome id, best first."""
    return tools.HallOfFame(size, similar=same_genome)


def rank_key(time_us: float, genome_id: str) -> tuple[float, str]:
    """The one order of "best": fastest device time first, ties broken by genome id. The hall of
    fame files, `evogemm status`, report.md and the database's `best()` all rank by it."""
    return (float(time_us), genome_id)


def hall_of_fame_entries(hof: tools.HallOfFame) -> list[dict[str, Any]]:
    """The JSON form written to hall_of_fame/<shape>.json, best first by `rank_key`:
    [{genome, measurement, fitness, origin}, ...]."""
    ranked = sorted(hof, key=lambda ind: rank_key(ind.time_us, ind.id))
    return [{"genome": ind.genome.to_dict(), "measurement": ind.measurement.to_dict(),
             "fitness": ind.value, "origin": ind.origin} for ind in ranked]


@dataclass
class Island:
    """One sub-population of one template family."""

    index: int
    family: str
    population: list[Individual] = field(default_factory=list)
    pending: list[Individual] = field(default_factory=list)  # told since the last survivor selection

    def ids(self) -> set[str]:
        return {ind.id for ind in self.population}

    def candidates(self) -> list[tuple[Genome, float]]:
        return [(ind.genome, ind.value) for ind in self.population]

    def median_time(self) -> "float | None":
        times = sorted(ind.time_us for ind in self.population)
        if not times:
            return None
        mid = len(times) // 2
        return times[mid] if len(times) % 2 else 0.5 * (times[mid - 1] + times[mid])


def tournament_without_replacement(individuals: Sequence[Individual], k: int, tournsize: int,
                                   rng: random.Random) -> list[Individual]:
    """k distinct individuals, each the best of `tournsize` drawn from those left (seeded rng; DEAP's
    own selTournament draws from the global `random` module and may pick one individual twice)."""
    left = list(individuals)
    chosen: list[Individual] = []
    while left and len(chosen) < k:
        contestants = rng.sample(left, min(tournsize, len(left)))
        best = max(contestants, key=lambda ind: (ind.value, ind.id))
        chosen.append(best)
        left.remove(best)
    return chosen


def survivors(pool: Iterable[Individual], size: int, elite: int, tournsize: int,
              rng: random.Random) -> list[Individual]:
    """(mu + lambda): the `elite` best always survive, the rest by tournament; one entry per genome."""
    unique: dict[str, Individual] = {}
    for ind in pool:
        unique.setdefault(ind.id, ind)
    ranked = sorted(unique.values(), key=lambda ind: (-ind.value, ind.id))
    if len(ranked) <= size:
        return ranked
    best = tools.selBest(ranked, elite)
    rest = [ind for ind in ranked if ind not in best]
    return best + tournament_without_replacement(rest, size - len(best), tournsize, rng)


def migrate_ring(islands: Sequence[Island], k: int, size: int) -> list[tuple[int, int, str]]:
    """Ring migration among islands of the same family: the k best of each island replace the
    worst of the next (DEAP selBest / selWorst) where the next is full (`size`); genomes the
    target already holds are not sent.
    Returns (from, to, genome id) for each migrant."""
    moves: list[tuple[int, int, str]] = []
    if k <= 0:
        return moves
    by_family: dict[str, list[Island]] = {}
    for isl in islands:
        by_family.setdefault(isl.family, []).append(isl)
    for ring in by_family.values():
        if len(ring) < 2:
            continue
        emigrants = [tools.selBest(sorted(isl.population, key=lambda i: i.id), k) for isl in ring]
        for j, source in enumerate(ring):
            target = ring[(j + 1) % len(ring)]
            have = target.ids()
            incoming = [ind for ind in emigrants[j] if ind.id not in have]
            if not incoming:
                continue
            ordered = sorted(target.population, key=lambda i: i.id)
            excess = max(0, len(ordered) + len(incoming) - size)
            victims = tools.selWorst(ordered, min(excess, len(ordered)))
            victim_ids = {v.id for v in victims}
            target.population = [ind for ind in target.population if ind.id not in victim_ids] + incoming
            moves.extend((source.index, target.index, ind.id) for ind in incoming)
    return moves
