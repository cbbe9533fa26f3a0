"""Search spaces: parameters, the rules that make a genome buildable, and classic variation.

A family's space lists its parameters (each with its allowed values and whether it is fixed at
compile time or passed at run time) and its rules. A rule names itself, says in words what it
requires, checks a parameter dict, and may repair one. Shape rules (alignment, say) take the
problem too. Invalid genomes are refused or repaired here, before they cost a build.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .genome import Genome
from .param_spec import ParamSpec
from .problem import Problem

Params = dict[str, Any]

@dataclass(frozen=True)
class Violation:
    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


class _Revised:
    """A rule with versions: `since` is the space revision (SPACE_REVISION) from which this version holds; `before`
    is the version a campaign created at an earlier revision keeps (None: the rule did not exist then), so its
    draws and its resume by replay stay as they were."""

    since: int
    before: "_Revised | None"

    def as_of(self, revision: int):
        """The version of this rule a space at `revision` has, None if it had none."""
        if revision >= self.since:
            return self
        return self.before.as_of(revision) if self.before is not None else None


@dataclass(frozen=True)
class Rule(_Revised):
    """`check(params)` returns None when satisfied, else a message naming what is wrong."""

    name: str
    description: str
    check: Callable[[Mapping[str, Any]], "str | None"]
    repair: "Callable[[Params, random.Random], Params] | None" = None
    since: int = 0
    before: "Rule | None" = None


@dataclass(frozen=True)
class ShapeRule(_Revised):
    """`check(params, problem)`, as Rule's; versioned the same way (a shape a family newly runs stays out of a
    campaign created before, so its resume replays)."""

    name: str
    description: str
    check: Callable[[Mapping[str, Any], Problem], "str | None"]
    since: int = 0
    before: "ShapeRule | None" = None


class InvalidGenome(ValueError):
    """A genome that breaks its family's rules; `violations` says which and why."""

    def __init__(self, violations: Sequence[Violation], genome: "Genome | None" = None):
        self.violations = list(violations)
        self.genome = genome
        lines = "; ".join(str(v) for v in self.violations)
        super().__init__(f"invalid genome: {lines}")


@dataclass
class SearchSpace:
    """The space of one template family."""

    family: str
    params: tuple[ParamSpec, ...]
    rules: tuple[Rule, ...] = ()
    shape_rules: tuple[ShapeRule, ...] = ()
    normalisers: tuple[Callable[[Params], Params], ...] = field(default=())
    blocks: tuple[str, ...] = ()  # template blocks that code patches may replace
    description: str = ""
    # the problem dimensions the parameters tile_m and tile_n walk, where the family has them:
    # ("n", "m") for a kernel that computes C^T (sm90_swapab)
    tile_axes: tuple[str, str] = ("m", "n")
    # runtime parameters that divide the work among CTAs (split-K factors, stream-K decomposition):
    # their best values follow the shape's wave count more than the kernel, so a seed's values are set
    # for the shape by the family's simulator model (evolution/seeding.py, population.fit_knobs)
    shape_knobs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        kinds = {p.name: p.kind for p in self.params}
        for name in self.shape_knobs:
            if kinds.get(name) != "runtime":
                raise ValueError(f"{self.family}: shape knob {name!r} is not a runtime parameter of the family")

    def as_of(self, revision: int) -> "SearchSpace":
        """This space as a campaign created at `revision` searches it: each parameter added later pinned
        to its default, each choice added later left out, so sampling, mutation and crossover make the draws
        they made then; each rule and shape rule as it was then (`Rule.as_of`, `ShapeRule.as_of`)."""
        pinned = tuple(p.as_of(revision) for p in self.params)
        rules = tuple(r for r in (rule.as_of(revision) for rule in self.rules) if r is not None)
        shape_rules = tuple(r for r in (rule.as_of(revision) for rule in self.shape_rules) if r is not None)
        if all(a.choices == b.choices for a, b in zip(pinned, self.params)) and rules == self.rules and \
                shape_rules == self.shape_rules:
            return self
        return replace(self, params=pinned, rules=rules, shape_rules=shape_rules)

    # -- basic facts -------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def spec(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.family} has no parameter {name!r}; parameters: {', '.join(self.names)}")

    def full(self, params: Mapping[str, Any]) -> Params:
        """`params` with each implicit parameter it does not name at its default (first choice)."""
        out = dict(params)
        for spec in self.params:
            if spec.implicit and spec.name not in out:
                out[spec.name] = spec.choices[0]
        return out

    def canonical(self, params: Mapping[str, Any]) -> Params:
        """`params` without the implicit parameters at their default: what a genome names."""
        defaults = {p.name: p.choices[0] for p in self.params if p.implicit}
        return {k: v for k, v in params.items() if not (k in defaults and v == defaults[k])}

    def _drawn(self, spec: ParamSpec) -> bool:
        """Whether sampling, mutation and crossover draw this parameter: an implicit one pinned to its
        default (a derived family that leaves it out) takes no random draw, so adding it changed no
        sequence of that family's draws."""
        return not (spec.implicit and len(spec.choices) == 1)

    def params_of(self, genome: Genome) -> Params:
        """Every parameter's value in `genome`, implicit ones included."""
        return self.full(genome.param_dict)

    def compile_params(self, genome: Genome) -> Params:
        params = self.params_of(genome)
        return {p.name: params[p.name] for p in self.params if p.kind == "compile"}

    def runtime_params(self, genome: Genome) -> Params:
        params = self.params_of(genome)
        return {p.name: params[p.name] for p in self.params if p.kind == "runtime"}

    def raw_size(self) -> int:
        return math.prod(len(p.choices) for p in self.params)

    def enumerate_valid(self, kind: "str | None" = None, base: "Mapping[str, Any] | None" = None) -> Iterator[Params]:
        """Every valid, canonical combination: of all params, or of one kind with the others
        taken from `base` (default: the first choices)."""
        specs = [p for p in self.params if kind is None or p.kind == kind]
        names = [p.name for p in specs]
        full_base = self.full(base) if base else None
        fixed = {p.name: (full_base[p.name] if full_base else p.choices[0]) for p in self.params if p not in specs}
        if any(fixed[p.name] not in p.choices for p in self.params if p.name in fixed):
            return  # a base value outside its choices: no combination with it is valid
        for combo in itertools.product(*(p.choices for p in specs)):
            params = dict(fixed)
            params.update(zip(names, combo))
            if self._drawn_is_valid(params):
                yield params

    def valid_size(self, kind: "str | None" = None, base: "Mapping[str, Any] | None" = None) -> int:
        return sum(1 for _ in self.enumerate_valid(kind, base))

    # -- validation --------------------------------------------------------------------------
    def _value_violations(self, params: Mapping[str, Any]) -> list[Violation]:
        out = []
        params = self.full(params)
        known = {spec.name for spec in self.params}
        for name in params:
            if name not in known:
                out.append(Violation("unknown-parameter", f"{self.family} has no parameter {name!r}; "
                                     f"parameters: {', '.join(self.names)}"))
        for spec in self.params:
            if spec.name not in params:
                out.append(Violation("missing-parameter", f"parameter {spec.name!r} is missing"))
            elif params[spec.name] not in spec.choices:
                allowed = ", ".join(str(c) for c in spec.choices)
                out.append(Violation(f"{spec.name}-value",
                                     f"{spec.name}={params[spec.name]!r} is not allowed; allowed: {allowed}"))
        return out

    def _violations(self, params: Mapping[str, Any]) -> list[Violation]:
        out = self._value_violations(params)
        if out:
            return out
        params = self.full(params)
        for rule in self.rules:
            message = rule.check(params)
            if message:
                out.append(Violation(rule.name, message))
        return out

    def _drawn_is_valid(self, params: Params) -> bool:
        """For a full dict whose values all come from their choices (a draw, an enumerated combination): whether
        every rule holds (only rules can fail; the first broken one decides) and it is already canonical."""
        return not any(rule.check(params) for rule in self.rules) and self._normalise(params) == self.canonical(params)

    def _normalise(self, params: Params) -> Params:
        """The canonical form: normalisers applied to the full parameters, implicit defaults left out."""
        params = self.full(params)
        for fn in self.normalisers:
            params = fn(dict(params))
        return self.canonical(params)

    def violations(self, genome: Genome, problem: "Problem | None" = None) -> list[Violation]:
        if genome.family != self.family:
            return [Violation("family", f"genome family {genome.family!r} is not {self.family!r}")]
        out = self._violations(genome.param_dict)
        for patch in genome.patches:
            if patch.block not in self.blocks:
                out.append(Violation("patch-block", f"patch names block {patch.block!r}; "
                                     f"{self.family} has blocks: {', '.join(self.blocks)}"))
        if problem is not None and not out:
            out.extend(self.shape_violations(genome, problem))
        return out

    def shape_violations(self, genome: Genome, problem: Problem) -> list[Violation]:
        out = []
        params = self.params_of(genome)
        for rule in self.shape_rules:
            message = rule.check(params, problem)
            if message:
                out.append(Violation(rule.name, message))
        return out

    def is_valid(self, genome: Genome, problem: "Problem | None" = None) -> bool:
        return not self.violations(genome, problem)

    def validate(self, genome: Genome, problem: "Problem | None" = None) -> Genome:
        """Return the normalised genome, or raise InvalidGenome naming every broken rule."""
        found = self.violations(genome, problem)
        if found:
            raise InvalidGenome(found, genome)
        return self.normalise(genome)

    def normalise(self, genome: Genome) -> Genome:
        """Canonical form: parameters that have no effect are set to their neutral value."""
        return Genome.make(self.family, self._normalise(genome.param_dict), genome.patches)

    def supports(self, problem: Problem) -> "str | None":
        """None if some genome of this family can run the problem, else the reason it cannot.

        Tried: the default parameters, then each one-parameter change of them (a shape rule may
        depend on a parameter, as sm90_padded's does on k_pad). The reason given is the default's."""
        base = self.default_params()
        first = self._shape_violation(base, problem)
        if first is None:
            return None
        for spec in self.params:
            for value in spec.choices:
                if value != base[spec.name] and self._shape_violation({**base, spec.name: value}, problem) is None:
                    return None
        return first

    def _shape_violation(self, params: Mapping[str, Any], problem: Problem) -> "str | None":
        for rule in self.shape_rules:
            message = rule.check(params, problem)
            if message:
                return message
        return None

    # -- repair ------------------------------------------------------------------------------
    def repair(self, genome: Genome, rng: random.Random, max_rounds: int = 20) -> Genome:
        """Bring a genome within the rules, changing as little as the rules' repairs say.

        Values outside a parameter's choices snap to the nearest allowed value. Raises
        InvalidGenome if a rule without a repair is still broken.
        """
        params = genome.param_dict
        for name in list(params):
            if name not in self.names:
                del params[name]
        for spec in self.params:
            if spec.name not in params:
                params[spec.name] = spec.choices[0]
            elif params[spec.name] not in spec.choices:
                params[spec.name] = nearest_choice(spec, params[spec.name])
        for _ in range(max_rounds):
            broken = [r for r in self.rules if r.check(params)]
            if not broken:
                break
            rule = broken[0]
            if rule.repair is None:
                raise InvalidGenome([Violation(rule.name, rule.check(params) or "")], genome)
            params = rule.repair(dict(params), rng)
        else:
            raise InvalidGenome(self._violations(params), genome)
        patches = tuple(p for p in genome.patches if p.block in self.blocks)
        return Genome.make(self.family, self._normalise(params), patches)

    # -- sampling and classic variation -------------------------------------------------------
    def default_params(self) -> Params:
        return {p.name: p.choices[0] for p in self.params}

    def sample(self, rng: random.Random, max_tries: int = 1000) -> Genome:
        """A valid genome drawn uniformly over distinct (canonical) genomes: rejection sampling
        keeps only draws that are already in canonical form, so a genome that several raw
        parameter combinations normalise to is not drawn more often; repair as a last resort."""
        for _ in range(max_tries):
            params = {p.name: rng.choice(p.choices) if self._drawn(p) else p.choices[0] for p in self.params}
            if self._drawn_is_valid(params):
                return Genome.make(self.family, self.canonical(params))
        return self.repair(Genome.make(self.family, params), rng)

    def mutate(self, genome: Genome, rng: random.Random, n_changes: int = 1,
               kinds: "Iterable[str] | None" = None, frozen: Iterable[str] = ()) -> Genome:
        """Change `n_changes` parameters to neighbouring values, then repair. Never returns the parent.
        `frozen` parameters (those the genome's code patches cover) keep their values, also through
        the repair; when no child keeps them, a fresh sample (without patches) is returned."""
        frozen = frozenset(frozen)
        allowed = [p for p in self.params if (kinds is None or p.kind in set(kinds)) and p.name not in frozen
                   and self._drawn(p)]
        before = self.params_of(genome)
        for _ in range(50 if allowed else 0):
            params = dict(before)
            for spec in rng.sample(allowed, k=min(n_changes, len(allowed))):
                params[spec.name] = self._step(spec, params[spec.name], rng)
            try:
                child = self.repair(Genome.make(self.family, params, genome.patches), rng)
            except InvalidGenome:
                continue
            after = self.params_of(child)
            if child.id != genome.id and all(after.get(name) == before.get(name) for name in frozen):
                return child
        return self.sample(rng)

    def crossover(self, a: Genome, b: Genome, rng: random.Random,
                  frozen: "Callable[[Genome], frozenset[str]] | None" = None) -> Genome:
        """Uniform crossover of parameters; patches come from either parent, block by block.

        With `frozen` (genome -> the parameters its patches cover), a patch brings the values of
        the parameters it covers from its own parent; a patch whose covered values clash with an
        earlier one's is left out, and a child whose repair moves them is drawn again (at last,
        `a` itself is returned, which the engine knows already)."""
        full_a, full_b = self.params_of(a), self.params_of(b)
        for _ in range(20 if frozen is not None else 1):
            params = {p.name: (full_a[p.name] if rng.random() < 0.5 else full_b[p.name]) if self._drawn(p)
                      else full_a[p.name] for p in self.params}
            chosen = {p.block: (p, a) for p in a.patches}
            for p in b.patches:
                if p.block not in chosen or rng.random() < 0.5:
                    chosen[p.block] = (p, b)
            pinned: dict[str, Any] = {}
            patches = []
            for block in sorted(chosen):
                patch, source = chosen[block]
                covered = frozen(Genome(source.family, source.params, (patch,))) if frozen is not None else ()
                values = full_a if source is a else full_b
                if any(name in pinned and pinned[name] != values[name] for name in covered):
                    continue
                pinned.update({name: values[name] for name in covered})
                patches.append(patch)
            params.update(pinned)
            try:
                child = self.repair(Genome.make(self.family, params, patches), rng)
            except InvalidGenome:
                if frozen is None:
                    raise
                continue
            if all(self.params_of(child).get(name) == value for name, value in pinned.items()):
                return child
        return a

    def neighbours(self, genome: Genome) -> list[Genome]:
        """Every valid genome one step away in one parameter (deduplicated, parent excluded)."""
        seen = {genome.id}
        out = []
        base = self.params_of(genome)
        for spec in self.params:
            current = base[spec.name]
            for value in self._adjacent(spec, current):
                params = dict(base)
                params[spec.name] = value
                if self._violations(params):
                    continue
                child = Genome.make(self.family, self._normalise(params), genome.patches)
                if child.id not in seen:
                    seen.add(child.id)
                    out.append(child)
        return out

    @staticmethod
    def _adjacent(spec: ParamSpec, value: Any) -> list[Any]:
        choices = list(spec.choices)
        if value not in choices:
            return [nearest_choice(spec, value)]
        i = choices.index(value)
        if spec.ordered:
            return [choices[j] for j in (i - 1, i + 1) if 0 <= j < len(choices)]
        return [c for c in choices if c != value]

    def _step(self, spec: ParamSpec, value: Any, rng: random.Random) -> Any:
        options = self._adjacent(spec, value)
        if spec.ordered and rng.random() < 0.2:  # occasionally jump anywhere
            options = [c for c in spec.choices if c != value]
        return rng.choice(options) if options else value

    def describe(self) -> str:
        lines = [f"family {self.family}: {self.description}".rstrip(": "), "", "parameters:"]
        for p in self.params:
            values = ", ".join(str(c) for c in p.choices)
            lines.append(f"  {p.name:<14} [{p.kind}] {values}" + (f"  -- {p.doc}" if p.doc else "")
                         + (f" (a genome that does not name it: {p.choices[0]})" if p.implicit else ""))
        lines += ["", "rules:"]
        lines += [f"  {r.name}: {r.description}" for r in self.rules]
        lines += [f"  {r.name} (per shape): {r.description}" for r in self.shape_rules]
        if self.blocks:
            lines += ["", "patchable template blocks: " + ", ".join(self.blocks)]
        return "\n".join(lines)


def nearest_choice(spec: ParamSpec, value: Any, larger_on_tie: bool = False) -> Any:
    """The choice of a numeric parameter nearest `value` (the smaller on a tie, or the larger); a parameter or a
    value that is not numeric: its first choice."""
    if isinstance(value, (int, float)) and all(isinstance(c, (int, float)) for c in spec.choices):
        return min(spec.choices, key=lambda c: (abs(c - value), -c if larger_on_tie else c))
    return spec.choices[0]
