"""The operator interface (parents -> children) and the classic operators.

An operator never compiles and never chooses: it reads its parents and the context the engine
hands it, and proposes children. LLM operators (llm_mutators/) implement the same interface.
"""

from __future__ import annotations

import math
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
    spaces: Mapping[str, SearchSpace] = field(default_factory=dict)  # every family this shape may use
    # the campaign's LLM gateway: llm(model, messages, max_tokens=, temperature=) -> a result with
    # .text and .tokens (evolution.llm_gateway); None when the campaign names no LLM providers
    llm: "Callable[..., Any] | None" = None
    # the parameters a genome's code patches cover (templates.frozen_params, injected by the engine):
    # operators leave them as they are, since changing one gives a new id but not new code.
    # None: no freezing.
    frozen: "Callable[[Genome], frozenset[str]] | None" = None
    # the analytic model's time (us) of a genome on `problem`, on the campaign's simulated device
    # (evolution.seeding.model_order; inf where no model prices it): the surrogate model_mutate ranks
    # its candidates by. None: the engine gave no model
    price: "Callable[[Genome], float] | None" = None
    # ids of the genomes the strategy has already proposed on this shape (measured, failed or still in
    # flight): a child with one of them is dropped, so an operator that ranks candidates skips them
    proposed: frozenset = frozenset()

    def space_of(self, genome: Genome) -> SearchSpace:
        """The space of the genome's own family (an operator may move a child to another family)."""
        return self.spaces.get(genome.family, self.space)

    def frozen_of(self, genome: Genome) -> frozenset[str]:
        """The parameters of `genome` that no operator may change (empty without patches)."""
        return frozenset(self.frozen(genome)) if self.frozen is not None and genome.patches else frozenset()


class OperatorError(RuntimeError):
    """An operator that produced no child: the model's answer was garbage or invalid, the call
    failed, no model is configured. `kind` says which; the engine credits it to the operator's arm
    and goes on (a child that fails to build or run is a different thing: its measurement says so)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


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
        child = ctx.space.mutate(parent, ctx.rng, n_changes=n, kinds=self.kinds, frozen=ctx.frozen_of(parent))
        return [Offspring(child, self.name, (parent.id,), note=f"mutated {n} parameter(s)")]


class ParamCrossover:
    """Uniform crossover of two parents' parameters (and patches), then repair."""

    arity = 2

    def __init__(self, name: str = "param_crossover"):
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        a, b = parents[0], parents[1]
        child = ctx.space.crossover(a, b, ctx.rng, frozen=ctx.frozen_of if ctx.frozen is not None else None)
        return [Offspring(child, self.name, (a.id, b.id))]


class RandomSample:
    """A fresh valid genome from the space (exploration; also the random-search baseline)."""

    arity = 0

    def __init__(self, name: str = "random_sample"):
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        return [Offspring(ctx.space.sample(ctx.rng), self.name, ())]


class FamilyJump:
    """Carry a parent into another template family of the campaign (one the shape may use).

    Parameters of the same name keep their value (numbers snap to the nearest allowed value), the
    others are sampled, and the target family's rules repair the result: an sm90_cutlass tile
    becomes the same tile in sm90_padded or sm80_cutlass, a skinny kernel's neighbour a tile GEMM.
    Code patches stay behind (they are written against the parent's template), so the child has
    no frozen parameters.
    """

    arity = 1

    def __init__(self, tries: int = 20, name: str = "family_jump"):
        self.tries = tries
        self.name = name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        parent = parents[0]
        targets = [ctx.spaces[f] for f in sorted(ctx.spaces) if f != parent.family
                   and ctx.spaces[f].supports(ctx.problem) is None]
        if not targets:
            return []
        space = ctx.rng.choice(targets)
        own = ctx.space_of(parent).params_of(parent)  # implicit parameters at their default included
        kept = [spec.name for spec in space.params if spec.name in own]
        child = None
        for _ in range(self.tries):  # the sampled parameters must also fit the shape (alignment, say)
            params = space.full(space.sample(ctx.rng).param_dict)
            params.update({name: own[name] for name in kept})
            try:
                child = space.repair(Genome.make(space.family, params), ctx.rng)
            except InvalidGenome:
                continue
            if space.is_valid(child, ctx.problem):
                break
        if child is None:
            return []
        return [Offspring(child, self.name, (parent.id,),
                          note=f"from {parent.family} to {space.family}, kept {', '.join(kept) or 'nothing'}")]


class ModelMutate:
    """Surrogate-guided mutation, as TVM MetaSchedule's cost model guides its evolutionary search:
    draw `candidates` mutations of the parent (one to `n_changes` parameters each, like
    param_mutate) and, for a parent without code patches, `jumps` genomes sampled from the whole
    space; keep those valid on the shape and not proposed on it before, and propose the one the
    family's analytic model (`ctx.price`) says is fastest. Each child still costs a build and a
    timing: the model only chooses which. Where the model prices none of them, the first candidate
    goes (a plain mutation).

    On the simulator backend with its default model, the model is the evaluator itself, so there
    this operator is an oracle, not a test of a search (`evogemm ablate` refuses it). The children
    depend on the model: a campaign that uses it resumes identically only with the same family
    models and calibration files (as its seed order does)."""

    arity = 1
    uses_model = True  # it ranks by the simulator's model: an oracle where that model is the evaluator

    def __init__(self, candidates: int = 8, n_changes: int = 2, jumps: int = 0, name: str = "model_mutate"):
        if candidates < 1:
            raise ValueError("model_mutate: candidates must be >= 1")
        if n_changes < 1:
            raise ValueError("model_mutate: n_changes must be >= 1")
        if jumps < 0:
            raise ValueError("model_mutate: jumps must be >= 0")
        self.candidates, self.n_changes, self.jumps, self.name = candidates, n_changes, jumps, name

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        if ctx.price is None:
            raise OperatorError("unavailable", "model_mutate needs the analytic model (the engine gives "
                                               "OperatorContext.price); none was given")
        parent = parents[0]
        space, frozen = ctx.space_of(parent), ctx.frozen_of(parent)
        drawn = [(space.mutate(parent, ctx.rng, n_changes=ctx.rng.randint(1, self.n_changes), frozen=frozen), "move")
                 for _ in range(self.candidates)]
        if not parent.patches:  # a sample of the whole space would drop the parent's code patches
            drawn += [(space.sample(ctx.rng), "jump") for _ in range(self.jumps)]
        pool: list[tuple[Genome, str]] = []
        seen = {parent.id, *ctx.proposed, *(ctx.history.get("times") or {})}
        for genome, kind in drawn:
            if genome.id not in seen and space.is_valid(genome, ctx.problem):
                seen.add(genome.id)
                pool.append((genome, kind))
        if not pool:
            return []
        t, i = min((_finite(ctx.price(g)), i) for i, (g, _) in enumerate(pool))
        if not math.isfinite(t):
            return [Offspring(pool[0][0], self.name, (parent.id,),
                              note="model_mutate: the model priced no candidate; a plain mutation")]
        genome, kind = pool[i]
        return [Offspring(genome, self.name, (parent.id,),
                          note=f"model_mutate: the fastest of {len(pool)} candidates by the model "
                               f"({t:.1f} us, a {kind})")]


def _finite(t: Any) -> float:
    """A price as a float; NaN and anything that is not a number rank last (inf)."""
    try:
        t = float(t)
    except (TypeError, ValueError):
        return math.inf
    return t if math.isfinite(t) else math.inf


def apply_operator(op: Operator, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
    """Run an operator and keep only children valid for the problem (repairing where the space can),
    each in the space of its own family. A repair that would change a frozen parameter (one that a
    code patch covers) drops the child."""
    out = []
    for child in op(parents, ctx):
        space = ctx.space_of(child.genome)
        if space.family != child.genome.family:
            continue  # a family this shape does not use
        try:
            genome = space.repair(child.genome, ctx.rng)
        except InvalidGenome:
            continue
        if any(space.params_of(genome).get(name) != space.full(child.genome.param_dict).get(name)
               for name in ctx.frozen_of(genome)):
            continue
        if space.is_valid(genome, ctx.problem):
            out.append(Offspring(genome, child.operator, child.parent_ids, child.note, child.meta))
    return out


def classic_operators() -> dict[str, Callable[..., Operator]]:
    return {"param_mutate": ParamMutate, "param_crossover": ParamCrossover, "random_sample": RandomSample,
            "family_jump": FamilyJump, "model_mutate": ModelMutate}
