"""The engine loop: shape after shape, rounds of ask -> evaluate -> tell, with proposal and
evaluation overlapped, budgets, dedup, halls of fame, and resume by replay.

Shapes run one after another in campaign order, so a new shape can be seeded from the halls of
fame of the nearest shapes solved before it. Budgets are fixed per shape when the shape starts
(`allocation`): `evaluations_per_shape`, and a fair share (remaining / shapes left) of
`total_evaluations`, `gpu_seconds`, `wall_seconds` and `llm_tokens`; what one shape leaves
unspent goes to the next. Evaluation counts are exact; time and token limits are checked before
each round is proposed.

Overlap (deterministic). Round 0 (the first population) is asked, evaluated and told. From then
on, round g+1 is asked on a worker thread while round g is evaluated on the main thread, so the
proposal of g+1 sees the results of rounds up to g-1; g is told when both are done:

    ask(0) eval(0) tell(0) ask(1) [eval(1) | ask(2)] tell(1) [eval(2) | ask(3)] tell(2) ...

The strategy is only touched by one thread at a time, and always in this order, so the search is
a deterministic function of (campaign seed, sequence of measurements).

Dedup. A genome already measured on a shape is never measured again: a repeat proposal is told
the stored measurement and costs no budget. Builds are shared across shapes by the compile cache.

Resume (event sourcing). Every proposal is recorded (global sequence number) before its round is
evaluated, and every evaluation is committed in its own transaction as soon as it is known. On
`resume`, the engine runs the same loop from the start: strategies, policies, populations and
RNGs are rebuilt from the seed; each re-generated proposal must equal the recorded one at its
sequence number (else `ReplayMismatch`: the run cannot be continued faithfully), measurements
already in the database are served from it, and only what has none is evaluated. Decisions that
depend on the clock (wall-time budget, the per-shape allocation of time budgets) are replayed
from the database, not re-decided.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import random
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from deap import tools

from evaluator.api import BaselineSet, Evaluator, Measurement
from genome import Genome, Offspring, Problem, SearchSpace, family_registry, load_object

from .db import CampaignDB, ReplayMismatch
from .population import Individual, fitness_value, logbook_stats, make_hall_of_fame
from .registry import build_operators
from .seeding import seeds_for


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from the campaign seed and names (stable across processes and Python versions)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


@dataclass
class ShapeState:
    """Everything the engine tracks about one shape while it runs (rebuilt by replay)."""

    problem: Problem
    index: int
    allocation: dict[str, Any]
    baselines: "BaselineSet | None"
    strategy: Any = None
    hof: Any = None
    logbook: Any = None
    measured: dict[str, Measurement] = field(default_factory=dict)
    evaluations: int = 0
    proposals: int = 0
    reused: int = 0
    rounds: int = 0
    stall: int = 0
    failures: Counter = field(default_factory=Counter)
    gpu_seconds: float = 0.0
    tokens: int = 0
    wall_before: float = 0.0         # wall seconds spent on the shape in earlier sessions
    wall_started: float = 0.0        # monotonic time this session began working on the shape
    replayed: int = 0                # evaluations served from the database on resume
    done_reason: "str | None" = None
    status: str = "pending"
    history: list[tuple[int, "float | None"]] = field(default_factory=list)  # (evaluations, best time)

    @property
    def name(self) -> str:
        return self.problem.name

    @property
    def best_vendor_us(self) -> "float | None":
        return self.baselines.best_vendor_us if self.baselines else None

    @property
    def best(self) -> "Individual | None":
        return self.hof[0] if self.hof is not None and len(self.hof) else None

    def wall_seconds(self) -> float:
        extra = time.monotonic() - self.wall_started if self.status == "running" and self.wall_started else 0.0
        return self.wall_before + extra


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

    def state_dict(self) -> dict[str, Any]:
        return {"strategies": [s.state_dict() for s in self.strategies], "cursor": self._cursor}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for s, d in zip(self.strategies, state["strategies"]):
            s.load_state_dict(d)
        self._cursor = int(state["cursor"])


class Engine:
    """Runs (or resumes) a campaign whose config and database are given.

    `config` is an experiments.schema.CampaignConfig; `evaluator` an Evaluator, or None to build
    one from the config with evaluator.factory.make_evaluator (lazily: a fully recorded campaign
    replays without any evaluator). `progress` receives snapshots; `log` is a callable(str).
    """

    def __init__(self, config: Any, db: CampaignDB, evaluator: "Evaluator | None" = None,
                 log: "Callable[[str], None] | None" = None, progress: Any = None,
                 render: "Callable[[Genome], str] | None" = None, mode: str = "run",
                 on_shape_done: "Callable[[ShapeState], None] | None" = None):
        self.config = config
        self.db = db
        self._evaluator = evaluator
        self._own_evaluator = evaluator is None
        self.log = log or (lambda line: None)
        self.progress = progress
        self.render = render
        self.mode = mode
        self.on_shape_done = on_shape_done
        self.seed = int(config.seed)
        self.problems: list[Problem] = config.problems
        self.seq = 0
        self.states: dict[str, ShapeState] = {}
        self.solved: dict[str, list[Genome]] = {}
        self.policy_states: dict[str, Any] = {}
        self.last_policy_state: Any = None
        self.spaces = self._spaces()
        self.operator_specs = list(config.operators)
        self.warm_state = db.get_meta("warm_start_policy")
        self.handpicked = db.get_meta("handpicked", [])
        self.seed_pool = db.get_meta("seed_pool", {})
        self.simulated: "bool | None" = db.get_meta("simulated")
        self.evaluator_description: "str | None" = db.get_meta("evaluator_description")
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evogemm-propose")

    # -- setup ------------------------------------------------------------------------------------
    def _spaces(self) -> list[SearchSpace]:
        reg = family_registry()
        out = []
        for fam in self.config.families:
            factory = reg.resolve(fam) if fam in reg else load_object(fam)
            out.append(factory())
        return out

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = self._make_evaluator()
        return self._evaluator

    def _make_evaluator(self) -> Evaluator:
        cfg = self.config.evaluator
        recorded = self.db.get_meta("resolved_backend")
        backend = recorded or cfg.backend
        options: dict[str, Any] = dict(cfg.options)
        options.setdefault("seed", derive_seed(self.seed, "evaluator") % (1 << 31))
        options.setdefault("noise", cfg.noise)
        if cfg.timing:
            options.setdefault("timing", dict(cfg.timing))
        if ":" in backend:
            factory = load_object(backend)
            allowed = getattr(factory, "OPTIONS", None)
            ev = factory(**{k: v for k, v in options.items() if allowed is None or k in allowed})
            resolved = backend
        else:
            from evaluator.factory import make_evaluator
            ev = make_evaluator(backend, **options)
            resolved = "simulator" if getattr(ev, "simulated", False) else "gpu"
        self.simulated = bool(getattr(ev, "simulated", False))
        self.evaluator_description = ev.describe()
        if recorded is None:
            self.db.set_meta({"resolved_backend": resolved, "simulated": self.simulated,
                              "evaluator_description": self.evaluator_description})
        self.db.set_session_evaluator(self.evaluator_description)
        self.log(f"evaluator: {self.evaluator_description}"
                 + ("  [SIMULATED: no GPU; every time is a model estimate]" if self.simulated else ""))
        return ev

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self._own_evaluator and self._evaluator is not None:
            self._evaluator.close()

    # -- the campaign -----------------------------------------------------------------------------
    def run(self) -> dict[str, ShapeState]:
        try:
            for idx, problem in enumerate(self.problems):
                self._run_shape(idx, problem)
        finally:
            self._refresh()
        return self.states

    def _allocation(self, idx: int) -> dict[str, Any]:
        b = self.config.budget
        left = len(self.problems) - idx
        used_evals = sum(s.evaluations for s in self.states.values())
        used_gpu = sum(s.gpu_seconds for s in self.states.values())
        used_tokens = sum(s.tokens for s in self.states.values())
        used_wall = self.db.wall_seconds()
        alloc: dict[str, Any] = {"evaluations": b.evaluations_per_shape}
        if b.total_evaluations is not None:
            share = max(0, b.total_evaluations - used_evals) // left if left > 1 else \
                max(0, b.total_evaluations - used_evals)
            alloc["evaluations"] = share if alloc["evaluations"] is None else min(alloc["evaluations"], share)
        alloc["gpu_seconds"] = None if b.gpu_seconds is None else max(0.0, b.gpu_seconds - used_gpu) / left
        alloc["wall_seconds"] = None if b.wall_seconds is None else max(0.0, b.wall_seconds - used_wall) / left
        alloc["llm_tokens"] = None if b.llm_tokens is None else max(0, b.llm_tokens - used_tokens) // left
        return alloc

    def _run_shape(self, idx: int, problem: Problem) -> None:
        row = self.db.shape_row(problem.name) or {"status": "pending", "allocation": None, "reason": None,
                                                  "wall_seconds": 0.0}
        spaces = [s for s in self.spaces if s.supports(problem) is None]
        state = ShapeState(problem=problem, index=idx, allocation=row["allocation"] or {}, baselines=None)
        self.states[problem.name] = state
        if not spaces:
            why = "; ".join(f"{s.family}: {s.supports(problem)}" for s in self.spaces)
            state.status, state.done_reason = "done", f"unsupported ({why})"
            if row["status"] != "done":
                self.db.finish_shape(problem.name, state.done_reason)
            self.log(f"{problem.name}: skipped, no family supports it ({why})")
            self._refresh()
            return
        state.baselines = self.db.baselines(problem.name)
        if state.baselines is None:
            self.log(f"{problem.name}: measuring vendor baselines")
            self.db.record_baselines(self.evaluator.baselines(problem))
            state.baselines = self.db.baselines(problem.name)  # exactly what a resume will read
        if row["allocation"] is None:
            state.allocation = self._allocation(idx)
            self.db.start_shape(problem.name, state.allocation)
        state.wall_before = float(row.get("wall_seconds") or 0.0)
        state.status = "running"
        state.wall_started = time.monotonic()
        state.hof = make_hall_of_fame(self.config.population.hall_of_fame)
        state.logbook = tools.Logbook()
        state.logbook.header = ["round", "new", "reused", "evals", "best_us", "speedup", "failures", "max", "mean"]
        state.strategy = self._make_strategy(state, spaces)
        bv = state.baselines.best("device") if state.baselines else None
        self.log(f"{problem.name}: start (allocation {_fmt_alloc(state.allocation)}; best vendor "
                 f"{bv[0] + ' ' + format(bv[1], '.2f') + ' us' if bv else 'n/a'})")
        self._refresh()
        reason = self._loop(state)
        state.status, state.done_reason = "done", reason
        if row["status"] != "done":
            self.db.finish_shape(problem.name, reason)
        self._verify_hall_of_fame(state)
        self.solved[problem.name] = [ind.genome for ind in state.hof]
        policy = getattr(state.strategy, "policy", None)
        if policy is not None:
            self.policy_states[problem.name] = policy.state_dict()
            self.last_policy_state = self.policy_states[problem.name]
        best = state.best
        self.log(f"{problem.name}: done ({reason}); {state.evaluations} evaluations"
                 + (f", {state.replayed} replayed from the database" if state.replayed else "")
                 + (f"; best {best.time_us:.2f} us, {_speedup(state):.3f}x vs best vendor" if best else
                    "; no kernel passed"))
        self._refresh()
        if self.on_shape_done is not None:
            self.on_shape_done(state)

    def _verify_hall_of_fame(self, state: ShapeState) -> None:
        """On a GPU, measure the hall of fame once more in one run interleaved with the vendor
        baselines (MEASURE.md: candidate and baselines in the same process, on the same buffers);
        the report quotes these figures. Skipped on the simulator and when already recorded."""
        if self.simulated or not len(state.hof) or self.db.verified(state.name) is not None:
            return
        if "with_baselines" not in inspect.signature(self.evaluator.evaluate).parameters:
            self.log(f"{state.name}: the evaluator cannot measure baselines interleaved; hall of fame not re-verified")
            return
        genomes = [ind.genome for ind in state.hof]
        self.log(f"{state.name}: re-verifying the hall of fame ({len(genomes)} kernels) interleaved "
                 "with the vendor baselines")
        measurements, baselines = self.evaluator.evaluate(genomes, state.problem, with_baselines=True)
        for m in measurements:
            m.problem = state.name
        self.db.record_verified(state.name, baselines, measurements)

    def _make_strategy(self, state: ShapeState, spaces: Sequence[SearchSpace]) -> Any:
        cfg = self.config
        name = cfg.strategy.name
        seed = derive_seed(self.seed, "strategy", name, state.name)
        if name == "evolution":
            from .bandit import make_policy
            from .parents import select_parents
            operators = build_operators(self.operator_specs)
            policy = make_policy(cfg.selection.policy, list(operators),
                                 priors={arm: e.prior for arm, e in operators.items()}, **cfg.selection.params)
            warm = self.last_policy_state if self.last_policy_state is not None else self.warm_state
            if warm is not None:
                policy.warm_start(warm, weight=cfg.selection.warm_start_weight)
            pop = cfg.population
            initial = pop.size * max(pop.islands, len(spaces))
            seeds: list[tuple[Genome, str, str]] = []
            limit = int(math.floor(pop.seed_fraction * initial))
            for space in spaces:
                seeds += seeds_for(state.problem, space, self.solved if pop.nearest_shapes else {},
                                   self.seed_pool if pop.nearest_shapes else {},
                                   self.handpicked if pop.handpicked else [], pop.nearest_shapes, limit)
            from .evolve import EvolutionStrategy
            return EvolutionStrategy(
                state.problem, spaces, operators, policy, random.Random(seed), size=pop.size, islands=pop.islands,
                offspring=pop.offspring_per_island, elite=pop.elite, tournament=pop.tournament,
                migration_interval=pop.migration_interval, migration_size=pop.migration_size,
                seed_fraction=pop.seed_fraction, seeds=seeds, best_vendor_us=state.best_vendor_us,
                failure_reward=cfg.selection.failure_reward, reward=cfg.selection.reward, parents=cfg.selection.parents.model_dump(),
                render=self.render, select_parents=select_parents)
        if name == "random":
            from .strategies import RandomSearch
            factory: Any = RandomSearch
        elif name == "optuna_tpe":
            from .strategies import OptunaTPE
            factory = OptunaTPE
        else:
            factory = load_object(name)
        params = dict(cfg.strategy.params)
        made = [factory(space, state.problem, derive_seed(seed, space.family) % (1 << 31), **params)
                for space in spaces]
        return made[0] if len(made) == 1 else MultiFamily(made)

    # -- rounds -----------------------------------------------------------------------------------
    def _round_size(self, state: ShapeState, first: bool) -> int:
        strat = state.strategy
        if first and hasattr(strat, "initial_size"):
            return int(strat.initial_size)
        if hasattr(strat, "round_size"):
            return int(strat.round_size)
        pop = self.config.population
        return pop.offspring_per_island * pop.islands

    def _next_size(self, state: ShapeState, inflight: int, first: bool) -> "tuple[int, str | None]":
        """How many to ask for next (0 = the shape is done, with the reason)."""
        alloc = state.allocation
        n = self._round_size(state, first)
        if alloc.get("evaluations") is not None:
            left = alloc["evaluations"] - state.evaluations - inflight
            if left <= 0:
                return 0, "evaluation budget spent"
            n = min(n, left)
        if alloc.get("gpu_seconds") is not None and state.gpu_seconds >= alloc["gpu_seconds"]:
            return 0, "GPU-time budget spent"
        if alloc.get("llm_tokens") is not None and state.tokens >= alloc["llm_tokens"]:
            return 0, "LLM-token budget spent"
        if state.stall >= self.config.population.max_stall_rounds:
            return 0, f"no new genome in {state.stall} rounds"
        recorded = self.db.proposal(self.seq)
        if recorded is not None:
            if recorded["problem"] == state.name:
                return n, None  # replay: the recorded run went on here
            return 0, self.db.shape_row(state.name)["reason"] or "stopped (recorded)"
        row = self.db.shape_row(state.name)
        if row and row["status"] == "done":
            return 0, row["reason"] or "stopped (recorded)"
        if alloc.get("wall_seconds") is not None and state.wall_seconds() >= alloc["wall_seconds"]:
            return 0, "wall-time budget spent"
        return n, None

    def _loop(self, state: ShapeState) -> str:
        n, reason = self._next_size(state, 0, first=True)
        if n == 0:
            return reason or "nothing to do"
        batch = self._record(state, state.strategy.ask(n))
        while batch:
            new = self._new_genomes(state, batch)
            future: "Future[list[Offspring]] | None" = None
            pipelined = state.rounds >= 1
            if pipelined:
                n_next, reason = self._next_size(state, len(new), first=False)
                if n_next > 0:
                    future = self._pool.submit(state.strategy.ask, n_next)
            try:
                results = self._evaluate(state, new)
            finally:
                next_raw = future.result() if future is not None else None
            self._tell(state, batch, results)
            if not pipelined:
                n_next, reason = self._next_size(state, 0, first=False)
                next_raw = state.strategy.ask(n_next) if n_next > 0 else None
            if next_raw is None:
                return reason or "done"
            if not next_raw:
                return "the strategy proposed nothing new"
            batch = self._record(state, next_raw)
        return "the strategy proposed nothing"

    def _record(self, state: ShapeState, offspring: Sequence[Offspring]) -> list[tuple[int, Offspring]]:
        """Give each proposal its sequence number; insert it, or check it against the record."""
        rows = []
        out = []
        for off in offspring:
            seq = self.seq
            self.seq += 1
            meta = dict(off.meta or {})
            arm = meta.get("arm")
            parents = list(off.parent_ids)
            recorded = self.db.proposal(seq)
            if recorded is not None:
                mismatch = []
                for key, mine in (("problem", state.name), ("genome_id", off.genome.id), ("operator", off.operator),
                                  ("arm", arm), ("parent_ids", parents)):
                    if recorded[key] != mine:
                        mismatch.append(f"{key}: recorded {recorded[key]!r}, re-generated {mine!r}")
                if mismatch:
                    raise ReplayMismatch(
                        f"proposal #{seq} ({state.name}, round {state.rounds}) does not match the database: "
                        + "; ".join(mismatch) + ". The search is not reproducible from this database "
                        "(changed code, operators, or inputs?); resume cannot continue it faithfully.")
            else:
                rows.append({"seq": seq, "problem": state.name, "round": state.rounds, "island": meta.get("island"),
                             "genome": off.genome, "operator": off.operator, "arm": arm, "parent_ids": parents,
                             "note": off.note, "meta": {k: v for k, v in meta.items() if k not in ("island", "arm")}})
            state.proposals += 1
            state.tokens += int(meta.get("tokens", 0) or 0)
            out.append((seq, off))
        self.db.record_proposals(rows)
        return out

    def _new_genomes(self, state: ShapeState, batch: Sequence[tuple[int, Offspring]]) -> list[tuple[int, Genome]]:
        seen: set[str] = set()
        out = []
        for seq, off in batch:
            gid = off.genome.id
            if gid in state.measured or gid in seen:
                continue
            seen.add(gid)
            out.append((seq, off.genome))
        return out

    def _evaluate(self, state: ShapeState, new: Sequence[tuple[int, Genome]]) -> dict[str, Measurement]:
        out: dict[str, Measurement] = {}
        todo: list[tuple[int, Genome]] = []
        for seq, genome in new:
            stored = self.db.measurement(genome.id, state.name)
            if stored is not None:
                out[genome.id] = stored
                state.replayed += 1
            else:
                todo.append((seq, genome))
        size = self.config.evaluator.batch_size or max(1, len(todo))
        for start in range(0, len(todo), size):
            chunk = todo[start:start + size]
            genomes = [g for _, g in chunk]
            t0 = time.monotonic()
            measurements = self.evaluator.evaluate(genomes, state.problem)
            seconds = (time.monotonic() - t0) / max(1, len(chunk))
            if len(measurements) != len(genomes):
                raise RuntimeError(f"evaluator returned {len(measurements)} measurements for {len(genomes)} genomes")
            for (seq, genome), m in zip(chunk, measurements):
                if m.genome_id != genome.id:
                    raise RuntimeError(f"evaluator answered for genome {m.genome_id}, asked {genome.id}")
                m.problem = state.name
                self.db.record_evaluation(m, seconds=seconds, seq=seq, shape_wall=state.wall_seconds())
                out[genome.id] = m
        return out

    def _tell(self, state: ShapeState, batch: Sequence[tuple[int, Offspring]], results: Mapping[str, Measurement]) -> None:
        new_ok: list[Individual] = []
        n_new = reused = failures = 0
        for seq, off in batch:
            gid = off.genome.id
            if gid in results and gid not in state.measured:
                m = results[gid]
                state.measured[gid] = m
                state.evaluations += 1
                n_new += 1
                state.gpu_seconds += float(m.gpu_seconds or 0.0)
                if m.ok:
                    fit = fitness_value(m, state.best_vendor_us)
                    assert fit is not None
                    new_ok.append(Individual(off.genome, m, fit, origin=off.operator))
                else:
                    state.failures[m.status] += 1
                    failures += 1
            else:
                m = state.measured[gid]
                reused += 1
                state.reused += 1
            state.strategy.tell(off, m)
        state.hof.update(new_ok)
        state.rounds += 1
        state.stall = 0 if n_new else state.stall + 1
        best = state.best
        state.history.append((state.evaluations, best.time_us if best else None))
        stats = logbook_stats().compile(new_ok) if new_ok else {}
        state.logbook.record(round=state.rounds - 1, new=n_new, reused=reused, evals=state.evaluations,
                             best_us=best.time_us if best else None, speedup=_speedup(state),
                             failures=failures, **stats)
        policy = getattr(state.strategy, "policy", None)
        probs: dict[str, float] = {}
        if policy is not None:
            probs = dict(policy.probabilities())
            self.db.log_policy(state.name, state.rounds - 1, self.seq, self.config.selection.policy, probs,
                               policy.stats(), policy.state_dict())
        for line in getattr(state.strategy, "events", [])[:]:
            self.log(f"{state.name}: {line}")
        if hasattr(state.strategy, "events"):
            state.strategy.events.clear()
        top = ", ".join(f"{a} {p:.2f}" for a, p in sorted(probs.items(), key=lambda t: -t[1])[:3])
        self.log(f"{state.name} round {state.rounds - 1}: {n_new} new, {reused} reused, {failures} failed; "
                 f"{state.evaluations}/{state.allocation.get('evaluations') or '-'} evaluations; best "
                 + (f"{best.time_us:.2f} us ({_speedup(state):.3f}x vs best vendor)" if best else "none")
                 + (f"; p: {top}" if top else ""))
        self._refresh()

    # -- progress ---------------------------------------------------------------------------------
    def snapshot(self) -> list[dict[str, Any]]:
        out = []
        for idx, problem in enumerate(self.problems):
            st = self.states.get(problem.name)
            policy = getattr(st.strategy, "policy", None) if st else None
            best = st.best if st else None
            bv = st.baselines.best("device") if st and st.baselines else None
            out.append({
                "shape": problem.name,
                "status": st.status if st else "pending",
                "evaluations": st.evaluations if st else 0,
                "budget": st.allocation.get("evaluations") if st else None,
                "best_us": best.time_us if best else None,
                "vendor": bv[0] if bv else None,
                "vendor_us": bv[1] if bv else None,
                "speedup": _speedup(st) if st else None,
                "probabilities": dict(policy.probabilities()) if policy is not None else {},
                "failures": sum(st.failures.values()) if st else 0,
                "reason": st.done_reason if st else None,
                "replayed": st.replayed if st else 0,
            })
        return out

    def _refresh(self) -> None:
        if self.progress is not None:
            self.progress.update(self.snapshot(), simulated=self.simulated, evaluator=self.evaluator_description)


def _speedup(state: "ShapeState | None") -> "float | None":
    if state is None or state.best is None or not state.best_vendor_us:
        return None
    return state.best_vendor_us / state.best.time_us


def _fmt_alloc(alloc: Mapping[str, Any]) -> str:
    parts = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in alloc.items() if v is not None]
    return ", ".join(parts) or "unlimited"
