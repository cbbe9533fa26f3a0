"""A parent-selection plug-in: always the fittest candidates (pure exploitation)."""

from __future__ import annotations

import random
from typing import Sequence

from genome import Genome, SearchSpace


class BestTwo:
    def select(self, candidates: Sequence[tuple[Genome, float]], k: int, rng: random.Random,
               space: SearchSpace) -> list[Genome]:
        ranked = sorted(candidates, key=lambda c: (-c[1], c[0].id))
        return [ranked[i % len(ranked)][0] for i in range(k)] if ranked else []
