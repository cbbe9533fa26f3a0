"""An operator plug-in: nudge the CTA tile N of one parent to a neighbouring value.

An operator never compiles or measures: it maps parents to children (`Offspring`), and the
engine's space repairs and validates them. `arity` says how many parents it takes.
"""

from __future__ import annotations

from typing import Sequence

from genome import Genome, Offspring, OperatorContext


class TileNudge:
    arity = 1

    def __init__(self, name: str = "tile_nudge"):
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        parent = parents[0]
        if "tile_n" not in ctx.space.names:
            return []
        choices = ctx.space.spec("tile_n").choices
        i = choices.index(parent["tile_n"])
        j = min(len(choices) - 1, max(0, i + ctx.rng.choice((-1, 1))))
        params = parent.param_dict
        params["tile_n"] = choices[j]
        child = ctx.space.repair(Genome.make(parent.family, params, parent.patches), ctx.rng)
        return [Offspring(child, self.name, (parent.id,), note=f"tile_n {parent['tile_n']} -> {child['tile_n']}")]
