"""Shapes nobody tuned for: at seeded random shapes (1 to 65536 a side, odd sizes and powers of two, M = 1 and
K = 1 among them), every family's seeds and mutants are judged by the space's rules without an exception; a genome
refused names the rules it breaks, each with a message; a genome accepted has a finite, positive simulated time."""

from __future__ import annotations

import math
import random

import pytest

from evaluator.simulator import NoModel, simulate_time_us
from genome import Problem
from templates import family_registry

FAMILIES = family_registry()
SIDES = (1, 2, 3, 7, 8, 15, 16, 17, 33, 63, 64, 65, 96, 127, 128, 129, 255, 256, 257, 500, 512, 513, 1000, 1023,
         1024, 1025, 2049, 3000, 4096, 4097, 6144, 11008, 14336, 16384, 28672, 65536)


def odd_shapes(n: int, seed: int) -> "list[Problem]":
    rng = random.Random(seed)
    return [Problem(rng.choice(SIDES), rng.choice(SIDES), rng.choice(SIDES)) for _ in range(n)]


@pytest.mark.parametrize("name", sorted(FAMILIES.names()))
def test_every_family_judges_odd_shapes_and_prices_what_it_accepts(name):
    family = FAMILIES.resolve(name)
    space = family.space
    rng = random.Random(name)
    genomes = [g for _, g in family.seeds()]
    genomes += [space.mutate(rng.choice(genomes), rng, n_changes=2) for _ in range(6)]
    accepted = 0
    for problem in odd_shapes(40, seed=62):
        for g in genomes:
            if space.is_valid(g, problem):
                accepted += 1
                try:
                    t = simulate_time_us(g, problem)
                except NoModel:
                    continue
                assert t > 0 and math.isfinite(t), (name, str(problem), g.to_dict(), t)
            else:
                found = space.violations(g, problem)
                assert found and all(v.rule and v.message for v in found), (name, str(problem), g.to_dict())
    assert accepted > 0, f"{name} took none of 40 random shapes"
