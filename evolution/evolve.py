"""The evolutionary search strategy of one shape: islands, RL-weighted operator choice, parents
chosen by fitness and novelty, (mu + lambda) survivors with elites, ring migration.

It implements the search-strategy protocol (`ask(n)`, `tell(offspring, measurement)`), so the
engine runs it exactly like Optuna TPE or random search; `build(ctx)` makes it from the engine's
`StrategyContext` (all the shape's spaces, the operators, the policy, the seeds). Its DEAP
`Toolbox` holds the variation and selection functions.

Round structure. The first `ask` returns the initial population (seeds from the nearest solved
shapes and hand-picked genomes, at most `seed_fraction` of it, the rest sampled from the space),
dealt round-robin to the islands; with `screen` it also holds up to that many more seeds (never
samples: kernels built before cost a timing each), and the first survivor selection cuts every
island back to `size`. Each later `ask(n)` first folds the children told since the
previous ask into their islands (survivor selection; a migration every `migration_interval`
generations), then makes `n` children, one per slot, the slots dealt to the islands in turn.

Concurrent proposals. For every slot, in slot order and from the one random generator, the policy
picks an arm (operator), the parent selection picks its parents from the island, and a seed is
drawn for the call's own `random.Random`. Then the calls run: those of LLM arms (an entry with a
`model`, or an operator with `concurrent = True`) side by side on the engine's operator threads
(`llm.concurrency` of them), the others in this thread; each sees only its own generator and a
history made before any call ran, and its LLM requests are keyed by its seed
(LlmGateway.scoped), so nothing depends on thread timing. Results are taken in slot order: the
space repairs and validates, a genome already proposed is dropped, an operator's failure is
credited to its arm. A slot left without a child is planned again (at most MAX_ATTEMPTS times),
then filled by a fresh sample. Every new child of a call is kept: the first fills the slot, the
others wait in a queue and are handed out first by the next `ask` (so `ask(n)` never returns more
than n, and evaluation budgets stay exact; children still queued when the shape ends are dropped).
As soon as a call returns, its children go to `on_proposed` (the engine's prefetch: their builds
start while slower calls are still out).

Failures. An operator that raises (OperatorError and ProviderError say which `kind`: garbage,
invalid, refused, timeout, ...) produced no child: `failure_reward` goes to its arm and the
failure is listed in `operator_failures` (the engine stores them). A call refused by the campaign's
token budget (kind `budget`) is listed too but costs no arm anything: it says nothing of the model,
and from then on the LLM arms are passed over (not credited) for the rest of the shape. A child that fails to build or
run is told like any other and its measurement's reward goes to its arm. An operator with
`wants_failed_parents = True` (a fix operator) gets its parents from the recent failed genomes of
the island's family (compile errors, rejected builds, wrong results), with
`history["failure_of"] = {genome id: {status, reason, log}}`; with none to fix, the arm is passed
over for that slot (and not credited).

Reward (the policy's update at `tell`), from r = log(parent time / child time) of a successful
child (the faster parent for two-parent operators, the island's median time for parentless ones):
`success` (default) 1 if r > 0 else 0; `log_ratio` r itself; `improvement` max(r, 0); and
`failure_reward` for any child that fails. Why `success` by default: the mean of r measures how
much worse children are on average, which favours timid operators (runtime-knob tweaks lose
little but rarely win), while progress comes from the children that beat their parents; on the
simulator, Thompson sampling on log_ratio moved a third of the budget to the timid operator and
did worse than uniform choice (docs/results/ablation-simulator.md). Everything random draws from the one `random.Random`
given at construction, so the strategy is a deterministic function of (seed, measurements told).
"""

from __future__ import annotations

import math
import random
from concurrent.futures import Executor
from typing import Any, Callable, Mapping, Sequence

from deap import base

from evaluator.api import STATUS_COMPILE_FAILED, STATUS_REJECTED, STATUS_WRONG, Measurement
from genome import Genome, Offspring, Problem, SearchSpace, apply_operator

from .parents import FailedGenome
from .population import Individual, Island, fitness_value, migrate_ring, survivors
from .operators import OperatorEntry
from .proposals import MAX_ATTEMPTS, OperatorCalls
from .vendor_seeds import VENDOR_ORIGIN
from .wave_seeds import WAVE_ORIGIN

REWARDS = ("log_ratio", "improvement", "success")
FIXABLE = (STATUS_COMPILE_FAILED, STATUS_REJECTED, STATUS_WRONG)  # failures a fix operator may take as parents
KEEP_FAILED = 64   # failed genomes remembered for fix operators
PINNED_ORIGINS = (WAVE_ORIGIN, VENDOR_ORIGIN)   # seeds the first round takes on top of the others (its screen grows)


def _round_robin_by_family(seeds: Sequence[tuple[Genome, str, str]]) -> list[tuple[Genome, str, str]]:
    """Seeds dealt family by family in turn (each family's own order kept), so that a first
    population smaller than the seed list holds seeds of every family, not of the first alone."""
    by_family: dict[str, list[tuple[Genome, str, str]]] = {}
    for seed in seeds:
        by_family.setdefault(seed[0].family, []).append(seed)
    queues = list(by_family.values())
    out: list[tuple[Genome, str, str]] = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.pop(0))
    return out


class EvolutionStrategy(OperatorCalls):
    """Island-model evolution with a bandit over operators. See the module docstring."""

    def __init__(self, problem: Problem, spaces: Sequence[SearchSpace], operators: Mapping[str, OperatorEntry],
                 policy: Any, rng: random.Random, *, size: int = 16, islands: int = 2, offspring: int = 8,
                 elite: int = 2, tournament: int = 2, migration_interval: int = 4, migration_size: int = 2,
                 seed_fraction: float = 0.5, seeds: Sequence[tuple[Genome, str, str]] = (),
                 screen: int = 0,
                 best_vendor_us: "float | None" = None, failure_reward: float = -1.0, reward: str = "success",
                 parent_selection: Any = None, render: "Callable[[Genome], str] | None" = None,
                 llm: "Callable[..., Any] | None" = None, executor: "Executor | None" = None,
                 on_proposed: "Callable[[Sequence[Offspring]], None] | None" = None,
                 frozen: "Callable[[Genome], frozenset[str]] | None" = None,
                 check: "Callable[[Genome], str | None] | None" = None,
                 facts: "Mapping[str, Any] | None" = None,
                 price: "Callable[[Genome], float] | None" = None):
        if not spaces:
            raise ValueError("evolution needs at least one search space")
        if not operators:
            raise ValueError("evolution needs at least one operator")
        self.problem = problem
        self.spaces = {s.family: s for s in spaces}
        self.operators = dict(operators)
        self.policy = policy
        self.rng = rng
        self.size, self.offspring, self.elite, self.tournament = size, offspring, elite, tournament
        self.migration_interval, self.migration_size = migration_interval, migration_size
        self.seed_fraction = seed_fraction
        self.seeds = list(seeds)
        if screen < 0:
            raise ValueError(f"screen must be >= 0, got {screen}")
        self.screen = screen            # extra first-round slots, for seeds only
        self.best_vendor_us = best_vendor_us
        self.failure_reward = failure_reward
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        self.reward_kind = reward
        self.render = render
        self.llm = llm
        self.executor = executor        # runs the LLM arms' calls side by side (None: one after another)
        self.on_proposed = on_proposed  # called with each call's children as soon as it returns
        self.frozen = frozen            # genome -> the parameters its patched blocks cover (operators keep them)
        self.check = check              # genome -> why its patched code may not be built, or None
        self.facts: dict[str, Any] = dict(facts or {})  # what prompts show of the GPU and the baselines
        self.price = price              # genome -> the analytic model's time on the shape (model_mutate)
        families = [s.family for s in spaces]
        n_islands = max(islands, len(families))
        self.islands = [Island(i, families[i % len(families)]) for i in range(n_islands)]
        self.generation = 0
        self.migrations: list[tuple[int, int, int, str]] = []  # (generation, from, to, genome id)
        self.started = False
        self.proposed: set[str] = set()
        self.lineage: dict[str, dict[str, Any]] = {}     # genome id -> arm, parents, island
        self.known: dict[str, Individual] = {}          # successful genomes told so far
        self.failures: list[dict[str, Any]] = []
        self.operator_failures: list[dict[str, Any]] = []  # operators that produced no child, and why
        self.failed: list[FailedGenome] = []            # recent failed genomes, for fix operators
        self.fix_attempts: dict[str, int] = {}           # failed genome id -> times handed to a fix operator
        self.queued: list[Offspring] = []               # extra children of earlier calls, handed out first
        self.never_told: list[str] = []                 # arms of this ask's pulls that no child will answer
        self.llm_budget_spent = False                    # a call was refused by the token budget
        self.llm_tokens = 0                              # tokens of every LLM request of this shape (proposals.py)
        self.rewards: list[tuple[str, float]] = []
        self.events: list[str] = []                      # drained by the engine into the log
        self._cursor = 0                                 # next island to breed on

        if parent_selection is None:
            from .parents import FitnessNovelty
            parent_selection = FitnessNovelty()
        self.toolbox = base.Toolbox()
        self.toolbox.register("select_parents", parent_selection.select)
        self.toolbox.register("vary", apply_operator)
        self.toolbox.register("survive", survivors, size=size, elite=elite, tournsize=tournament)
        self.toolbox.register("migrate", migrate_ring, k=migration_size, size=size)

    @classmethod
    def check_params(cls, params: Mapping[str, Any]) -> None:
        if params:
            raise ValueError("the evolution strategy takes its settings from population/selection/operators; "
                             "strategy.params must be empty")

    @classmethod
    def build(cls, ctx: Any) -> "EvolutionStrategy":
        """Make the strategy from the engine's StrategyContext (evolution.search)."""
        cfg = ctx.config
        operators = ctx.operators()
        policy = ctx.policy(list(operators), {arm: e.prior for arm, e in operators.items()})
        pop = cfg.population
        initial = pop.size * max(pop.islands, len(ctx.spaces)) + pop.screen
        seeds = ctx.seeds(int(math.floor(pop.seed_fraction * initial)))
        pinned = sum(1 for s in seeds if s[1] in PINNED_ORIGINS)   # one-wave and vendor-mirror seeds: the screen
        # grows by these
        return cls(ctx.problem, ctx.spaces, operators, policy, random.Random(ctx.seed), size=pop.size,
                   islands=pop.islands, offspring=pop.offspring_per_island, elite=pop.elite,
                   tournament=pop.tournament, migration_interval=pop.migration_interval,
                   migration_size=pop.migration_size, seed_fraction=pop.seed_fraction, seeds=seeds,
                   screen=pop.screen + pinned, best_vendor_us=ctx.best_vendor_us,
                   failure_reward=cfg.selection.failure_reward,
                   reward=cfg.selection.reward, parent_selection=ctx.parent_selection(), render=ctx.render,
                   llm=getattr(ctx, "llm", None), executor=getattr(ctx, "executor", None),
                   on_proposed=getattr(ctx, "on_proposed", None), frozen=getattr(ctx, "frozen", None),
                   check=getattr(ctx, "check", None), facts=getattr(ctx, "extra", None),
                   price=getattr(ctx, "price", None))

    # -- search-strategy protocol -----------------------------------------------------------------
    @property
    def initial_size(self) -> int:
        """The first round: the population, plus up to `screen` more seeds (a smaller first round
        when there are not that many seeds: the screen never samples)."""
        base = self.size * len(self.islands)
        return base + max(0, min(self.screen, self._seed_count() - base))

    def _seed_count(self) -> int:
        return len({g.id for g, _, _ in self.seeds if any(i.family == g.family for i in self.islands)})

    @property
    def round_size(self) -> int:
        return self.offspring * len(self.islands)

    def ask(self, n: int) -> list[Offspring]:
        if n <= 0:
            return []
        if not self.started:
            self.started = True
            return self._initial(n)
        self._integrate()
        out, self.queued = self.queued[:n], self.queued[n:]
        islands = []
        for _ in range(n - len(out)):
            islands.append(self.islands[self._cursor % len(self.islands)])
            self._cursor += 1
        filled: dict[int, list[Offspring]] = {}
        todo = list(range(len(islands)))
        for _ in range(MAX_ATTEMPTS):
            if not todo:
                break
            calls = [c for c in (self._plan(slot, islands[slot]) for slot in todo) if c is not None]
            self._run(calls)
            for call in calls:
                kids = self._settle(call)
                if kids:
                    filled[call.slot] = kids
            todo = [slot for slot in todo if slot not in filled]
        for slot in todo:
            child = self._fallback(islands[slot])
            if child is not None:
                filled[slot] = [child]
        for slot in sorted(filled):
            out.append(filled[slot][0])
            self.queued.extend(filled[slot][1:])
        self._release_never_told()
        return out

    def forget(self, offspring: Offspring) -> None:
        """`offspring` will not be measured: the engine left it out of its round (round_cut.py). Its
        arm's pull is released, so that a policy counting pulls in flight (UCB) does not count it."""
        info = self.lineage.get(offspring.genome.id) or {"arm": offspring.meta.get("arm")}
        arm = info.get("arm")
        if arm is not None and arm in self.operators:
            self._release(arm)
            self._release_never_told()

    def tell(self, offspring: Offspring, measurement: Measurement) -> None:
        gid = offspring.genome.id
        info = self.lineage.get(gid) or {"arm": offspring.meta.get("arm"), "island": offspring.meta.get("island", 0),
                                         "parents": list(offspring.parent_ids)}
        island = self.islands[int(info.get("island") or 0) % len(self.islands)]
        fit = fitness_value(measurement, self.best_vendor_us)
        arm = info.get("arm")
        if arm is not None and arm in self.operators:
            reward = self._reward(info.get("parents") or [], island, measurement)
            self.policy.update(arm, reward)
            self.rewards.append((arm, reward))
        if fit is None:
            self.failures.append({"genome": gid, "status": measurement.status, "reason": measurement.reason})
            if measurement.status in FIXABLE:
                self.failed.append(FailedGenome(offspring.genome, measurement.status, measurement.reason,
                                                measurement.log))
                del self.failed[:-KEEP_FAILED]
            return
        if gid in self.known:
            return
        ind = Individual(offspring.genome, measurement, fit, origin=offspring.operator)
        self.known[gid] = ind
        self._home(island, offspring.genome.family).pending.append(ind)

    # -- internals --------------------------------------------------------------------------------
    def _history(self, island: Island) -> dict[str, Any]:
        best = sorted(self.known.values(), key=lambda i: (i.time_us, i.id))[:5]
        return {
            "problem": self.problem.name,
            "best_vendor_us": self.best_vendor_us,
            "best": [{"genome": i.genome.to_dict(), "time_us": i.time_us} for i in best],
            "recent_failures": self.failures[-5:],
            "island": island.index,
            "times": {gid: ind.time_us for gid, ind in self.known.items()},  # parents' times, for prompts
            **self.facts,                                                    # gpu, baselines (engine)
        }

    def _offspring(self, genome: Genome, operator: str, parents: Sequence[str], island: Island,
                   arm: "str | None", note: str = "", meta: "Mapping[str, Any] | None" = None) -> Offspring:
        self.proposed.add(genome.id)
        self.lineage[genome.id] = {"arm": arm, "island": island.index, "parents": list(parents)}
        merged = dict(meta or {})
        merged.update({"island": island.index, "arm": arm})
        return Offspring(genome, operator, tuple(parents), note, merged)

    def _initial(self, n: int) -> list[Offspring]:
        out: list[Offspring] = []
        base = self.size * len(self.islands)
        extra = max(0, n - base)  # the screen's slots: seeds only
        n_seeds = min(len(self.seeds), int(math.floor(self.seed_fraction * min(n, base))) + extra)
        # one-wave and vendor-mirror seeds (population.wave_seeds, vendor_seeds) come on top of the others, never in
        # their place
        pinned = [s for s in self.seeds if s[1] in PINNED_ORIGINS]
        dealt = _round_robin_by_family([s for s in self.seeds if s[1] not in PINNED_ORIGINS])[
            :max(0, n_seeds - len(pinned))]
        cursor = 0
        for genome, origin, note in dealt + pinned[:n_seeds]:
            islands = [i for i in self.islands if i.family == genome.family]
            if not islands or genome.id in self.proposed:
                continue
            island = islands[cursor % len(islands)]
            cursor += 1
            out.append(self._offspring(genome, origin, (), island, None, note))
        misses = 0
        fill = min(n, base)  # samples fill the population, never the screen
        while len(out) < fill and misses < 50 * n:
            island = self.islands[len(out) % len(self.islands)]
            space = self.spaces[island.family]
            genome = space.sample(self.rng)
            if genome.id in self.proposed or not space.is_valid(genome, self.problem):
                misses += 1
                continue
            out.append(self._offspring(genome, "init_sample", (), island, None, "initial population"))
        self.events.append(f"initial population: {len(out)} genomes ({n_seeds} offered by seeds)")
        return out

    def _integrate(self) -> None:
        if not any(i.pending for i in self.islands):
            return
        for island in self.islands:
            island.population = self.toolbox.survive(island.population + island.pending, rng=self.rng)
            island.pending = []
        self.generation += 1
        if len(self.islands) > 1 and self.generation % self.migration_interval == 0:
            moves = self.toolbox.migrate(self.islands)
            for src, dst, gid in moves:
                self.migrations.append((self.generation, src, dst, gid))
            if moves:
                self.events.append(f"generation {self.generation}: migrated {len(moves)} individual(s) "
                                   f"around the ring")

    def _home(self, island: Island, family: str) -> Island:
        """The island a told genome joins: its breeding island, or (a child moved to another family
        by an operator) the emptiest island of its own family."""
        if island.family == family:
            return island
        own = [i for i in self.islands if i.family == family]
        return min(own, key=lambda i: (len(i.population) + len(i.pending), i.index)) if own else island

    def _reward(self, parent_ids: Sequence[str], island: Island, m: Measurement) -> float:
        if not m.ok or not m.time_us:
            return self.failure_reward
        times = [self.known[p].time_us for p in parent_ids if p in self.known]
        ref = min(times) if times else island.median_time()
        if not ref:
            return 0.0
        r = math.log(ref / m.time_us)
        if self.reward_kind == "improvement":
            return max(0.0, r)
        if self.reward_kind == "success":
            return 1.0 if r > 0 else 0.0
        return r

