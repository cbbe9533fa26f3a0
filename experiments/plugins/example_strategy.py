"""A search-strategy plug-in: first-improvement hill climbing over one family's space.

Built per family as `HillClimb(space, problem, seed, **params)`; the engine asks for proposals
(`ask(n)`) and tells every measurement (`tell(offspring, measurement)`), and replays both on
resume, so a strategy needs no state file: it must only draw all its randomness from `seed`.
"""

from __future__ import annotations

import random

from evaluator.api import Measurement
from genome import Offspring, Problem, SearchSpace


class HillClimb:
    name = "hill_climb"

    def __init__(self, space: SearchSpace, problem: Problem, seed: int, explore: float = 0.0):
        if not 0.0 <= explore <= 1.0:
            raise ValueError("explore (the share of random restarts) must be in [0, 1]")
        self.space, self.problem = space, problem
        self.rng = random.Random(seed)
        self.best: "tuple[float, object] | None" = None  # (time us, genome)
        self.seen: set[str] = set()
        self.explore = explore

    def _fresh(self):
        for _ in range(200):
            g = self.space.sample(self.rng)
            if g.id not in self.seen and self.space.is_valid(g, self.problem):
                return g
        return None

    def ask(self, n: int) -> list[Offspring]:
        out = []
        explore = self.rng.random() < self.explore
        pool = self.space.neighbours(self.best[1]) if self.best and not explore else []
        self.rng.shuffle(pool)
        for g in pool:
            if len(out) >= n:
                break
            if g.id not in self.seen and self.space.is_valid(g, self.problem):
                self.seen.add(g.id)
                out.append(Offspring(g, self.name, (self.best[1].id,), note="neighbour of the best"))
        while len(out) < n:
            g = self._fresh()
            if g is None:
                break
            self.seen.add(g.id)
            out.append(Offspring(g, self.name, (), note="random start"))
        return out

    def tell(self, offspring: Offspring, measurement: Measurement) -> None:
        self.seen.add(offspring.genome.id)
        t = measurement.time_us if measurement.ok else None
        if t is not None and (self.best is None or t < self.best[0]):
            self.best = (t, offspring.genome)
