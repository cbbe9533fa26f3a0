"""How a shape's search strategy is built: the strategy registry, what a strategy is given, and
a round-robin over one strategy per template family.

Every strategy is named in the campaign (`strategy: evolution | random | optuna_tpe |
package.module:Class`) and resolved through one registry. A strategy class either has a
`build(ctx)` class method (it takes the whole `StrategyContext`: all the spaces, the operators,
the policy, the seeds), or it searches one space and is built per family as
`Class(space, problem, seed, **params)`, the families taking turns (`MultiFamily`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from evaluator.api import Measurement
from genome import Offspring, Problem, Registry, SearchSpace, check_params, class_with

from .evolve import EvolutionStrategy
from .strategies import OptunaTPE, RandomSearch


@dataclass
class StrategyContext:
    """What the engine hands a strategy for one shape. `operators`, `policy` and `seeds` are
    made on demand (a strategy that does not use them costs nothing)."""

    problem: Problem
    spaces: Sequence[SearchSpace]
    seed: int
    params: Mapping[str, Any]
    config: Any                                    # the campaign config (population, selection)
    best_vendor_us: "float | None" = None
    operators: Callable[[], Mapping[str, Any]] = dict
    policy: Callable[[Sequence[str], Mapping[str, float]], Any] = lambda arms, priors: None
    parent_selection: Callable[[], Any] = lambda: None
    seeds: Callable[[int], list] = lambda limit: []
    render: "Callable[[Any], str] | None" = None
    llm: "Callable[..., Any] | None" = None        # the campaign's LLM gateway (None: no providers)
    executor: Any = None                           # runs operator calls side by side (llm.concurrency)
    on_proposed: "Callable[[Sequence[Any]], None] | None" = None  # children as soon as a call returns
    frozen: "Callable[[Any], frozenset[str]] | None" = None  # genome -> parameters its patches cover
    check: "Callable[[Any], str | None] | None" = None  # genome -> why its patched code may not be built
    price: "Callable[[Any], float] | None" = None  # genome -> the analytic model's time on the shape (model_mutate)
    extra: dict[str, Any] = field(default_factory=dict)

    def seed_for(self, *parts: Any) -> int:
        from .rng import derive_seed
        return derive_seed(self.seed, *parts) % (1 << 31)


class MultiFamily:
    """Round-robin over one strategy per template family (for strategies that take one space)."""

    def __init__(self, strategies: Sequence[Any]):
        self.strategies = list(strategies)
        self._cursor = 0
        self._owner: dict[str, Any] = {}

    def ask(self, n: int) -> list[Offspring]:
        share = [0] * len(self.strategies)
        for i in range(n):
            share[(self._cursor + i) % len(self.strategies)] += 1
        self._cursor += n
        out = []
        for strat, k in zip(self.strategies, share):
            for off in strat.ask(k) if k else []:
                self._owner[off.genome.id] = strat
                out.append(off)
        return out

    def tell(self, offspring: Offspring, measurement: Measurement) -> None:
        self._owner.get(offspring.genome.id, self.strategies[0]).tell(offspring, measurement)


def strategy_registry() -> Registry:
    """A fresh registry of search strategies; plug-ins are classes with ask(n) and tell(offspring, m)."""
    return Registry("search strategy", {"evolution": EvolutionStrategy, "random": RandomSearch,
                                        "optuna_tpe": OptunaTPE}, check=class_with("ask", "tell"))


def check_strategy_params(factory: Any, params: Mapping[str, Any], name: str) -> None:
    """Refuse parameters the strategy does not take (a `build(ctx)` strategy checks its own)."""
    if hasattr(factory, "build"):
        check = getattr(factory, "check_params", None)
        if check is not None:
            check(params)
        return
    check_params(factory, params, ("space", "problem", "seed"), f"search strategy {name!r}")


def build_strategy(factory: Any, ctx: StrategyContext) -> Any:
    if hasattr(factory, "build"):
        return factory.build(ctx)
    made = [factory(space, ctx.problem, ctx.seed_for(space.family), **dict(ctx.params)) for space in ctx.spaces]
    return made[0] if len(made) == 1 else MultiFamily(made)
