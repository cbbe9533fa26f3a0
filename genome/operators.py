"""The operator interface (parents -> children) and the classic operators.

An operator never compiles and never chooses: it reads its parents and the context the engine
hands it, and proposes children. LLM operators (llm_mutators/) implement the same interface.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from .genome import Genome
from .problem import Problem
from .space import InvalidGenome, SearchSpace


@dataclass
class OperatorContext:
    """What an operator may look at. `history` is the engine's summary for prompts (best kernels,
    recent failures, baseline times); `render` shows a genome's source (injected by the engine,
    since genome/ imports nothing of ours)."""

    space: SearchSpace
    problem: Problem
    rng: random.Random
    history: Mapping[str, Any] = field(default_factory=dict)
    render: "Callable[[Genome], str] | None" = None


@dataclass(frozen=True)
class Offspring:
    genome: Genome
    operator: str
    parent_ids: tuple[str, ...]
    note: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)  # prompt / response ids, model, tokens


@runtime_checkable
class Operator(Protocol):
    name: str
    arity: int  # how many parents it takes (0 = none: it samples)

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]: ...


class ParamMutate:
    """Move one or a few parameters to neighbouring values, then repair."""

    arity = 1

    def __init__(self, n_changes: int = 1, kinds: "Sequence[str] | None" = None, name: str = "param_mutate"):
        if n_changes < 1:
            raise ValueError("param_mutate: n_changes must be >= 1")
        self.n_changes = n_changes
        self.kinds = tuple(kinds) if kinds else None
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        parent = parents[0]
        n = ctx.rng.randint(1, self.n_changes)
        child = ctx.space.mutate(parent, ctx.rng, n_changes=n, kinds=self.kinds)
        return [Offspring(child, self.name, (parent.id,), note=f"mutated {n} parameter(s)")]


class ParamCrossover:
    """Uniform crossover of two parents' parameters (and patches), then repair."""

    arity = 2

    def __init__(self, name: str = "param_crossover"):
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        a, b = parents[0], parents[1]
        child = ctx.space.crossover(a, b, ctx.rng)
        return [Offspring(child, self.name, (a.id, b.id))]


class RandomSample:
    """A fresh valid genome from the space (exploration; also the random-search baseline)."""

    arity = 0

    def __init__(self, name: str = "random_sample"):
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        return [Offspring(ctx.space.sample(ctx.rng), self.name, ())]


def apply_operator(op: Operator, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
    """Run an operator and keep only children valid for the problem (repairing where the space can)."""
    out = []
    for child in op(parents, ctx):
        try:
            genome = ctx.space.repair(child.genome, ctx.rng)
        except InvalidGenome:
            continue
        if ctx.space.is_valid(genome, ctx.problem):
            out.append(Offspring(genome, child.operator, child.parent_ids, child.note, child.meta))
    return out


def classic_operators() -> dict[str, Callable[..., Operator]]:
    return {"param_mutate": ParamMutate, "param_crossover": ParamCrossover, "random_sample": RandomSample}
