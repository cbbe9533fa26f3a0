"""The engine loop: shape after shape, rounds of ask -> evaluate -> tell, with proposal, builds and
timing overlapped, budgets, dedup, halls of fame, and resume by replay.

Shapes run one after another in campaign order, so a new shape can be seeded from the halls of
fame of the nearest shapes solved before it; with `population.shapes_in_flight` W > 1, up to W run
side by side, each seeded only from shapes W or more places before it (evolution/windows.py).
Budgets: evolution/budget.py; the evaluator: evolution/campaign_evaluator.py. Resume: the journal (evolution/journal.py) numbers and records every
proposal and measurement and serves them back. The strategy of a shape is made by
evolution/engine_strategy.py, logs and progress by evolution/engine_views.py.

Overlap (deterministic). Round 0 (the first population) is asked, evaluated and told. From then
on, round g+1 is asked on a worker thread while round g is evaluated on the main thread, so the
proposal of g+1 sees the results of rounds up to g-1; g is told when both are done:

    ask(0) eval(0) tell(0) ask(1) [eval(1) | ask(2) -> prefetch(2)] tell(1) [eval(2) | ask(3) ...

As soon as round g+1 is proposed, its new genomes go to the evaluator's `prefetch` (when it has
one: the GPU evaluator's Builder starts their nvcc builds), so they compile while the GPU times
round g (the Builder/Runner split of TVM MetaSchedule); round g's own builds are queued first.
Within a round, the strategy's operator calls run side by side on `llm.concurrency` operator
threads (evolution/evolve.py), and each call's children are prefetched as soon as it returns, so
their builds overlap the slower calls still out. The
strategy is only touched by one thread at a time, and always in this order, so the search is a
deterministic function of (campaign seed, sequence of measurements); a prefetch changes what is
built early, never what is measured (the GPU evaluator checks and times every kernel of a shape on
the same inputs, whichever kernels finish building together).

Dedup. A genome already measured on a shape is never measured again: a repeat proposal is told
the stored measurement and costs no budget. Builds are shared across shapes by the compile cache.

Operator failures (calls that produced no child) are stored in the database after each round,
numbered per shape; a resume re-generates the same ones, stored once.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

from evaluator.api import Evaluator
from genome import Genome, Offspring, Problem, SearchSpace

from .campaign_spaces import campaign_spaces, seed_model_device, vendor_mirrors_revision
from .budget import Grants, NoGrants, allocation, next_size
from .campaign_evaluator import make_campaign_evaluator
from .db import CampaignDB
from .journal import Journal
from .plugins import Plugins, make_plugins
from .population import Individual, fitness_value, make_hall_of_fame
from .confirm import admit
from .llm_gateway import make_gateway
from .reverify import verify_hall_of_fame
from .rng import derive_seed
from .round_clock import RoundClock, unbuilt
from .round_cut import cut_to_built
from .seeding import model_order, prune_families
from .engine_strategy import StrategyFactory
from .engine_views import EngineViews
from .shape_state import ShapeInputs, ShapeState, fmt_allocation
from .windows import CampaignStopped, run_windowed

__all__ = ["Engine", "ShapeState", "derive_seed"]


class Engine(StrategyFactory, EngineViews):
    """Runs (or resumes) a campaign whose config and database are given.

    Started shapes go on by the budget grants of `evogemm extend` (evolution/budget.py).

    `config` is an experiments.schema.CampaignConfig; `evaluator` an Evaluator, or None to build
    one from the config through the evaluator-backend registry (lazily: a fully recorded campaign
    replays without any evaluator). `progress` receives snapshots; `log` is a callable(str).
    """

    def __init__(self, config: Any, db: CampaignDB, evaluator: "Evaluator | None" = None,
                 log: "Callable[[str], None] | None" = None, progress: Any = None,
                 render: "Callable[[Genome], str] | None" = None, mode: str = "run",
                 on_shape_done: "Callable[[ShapeState], None] | None" = None,
                 plugins: "Plugins | None" = None):
        self.config = config
        self.db = db
        self.plugins = plugins or make_plugins(config.families)
        self._evaluator = evaluator
        self._own_evaluator = evaluator is None
        self._ui_lock = threading.RLock()  # log, progress and on_shape_done, from several shape threads
        self._log = log or (lambda line: None)
        self.log = self._locked_log
        self.progress = progress
        self.render = render
        self.mode = mode
        self.on_shape_done = on_shape_done
        self.seed = int(config.seed)
        self.problems: list[Problem] = config.problems
        self.window = int(getattr(config.population, "shapes_in_flight", 1) or 1)
        self._side_by_side = 1   # shapes that really run at once (window and the evaluator's lanes), set by run()
        self.journal = Journal(db, by_shape=self.window > 1)
        self.stopping = threading.Event()  # set when a shape thread failed: the others stop at their next round
        self._first_pass_done = False      # shapes side by side: grants wait until every shape ran once
        self.grants = Grants(db.get_meta("extensions", []), db, self.log)
        self._rounds = RoundClock()  # how long the rounds after a shape's first took (this session)
        self.states: dict[str, ShapeState] = {}
        self.solved: dict[str, list[Genome]] = {}
        self.policy_states: dict[str, Any] = {}
        self.last_policy_state: Any = None  # the campaign's final policy (side by side: the last shape's in order)
        self._last_policy_index = -1
        families = {id(f): f for f in (self.plugins.families.resolve(name) for name in config.families)}
        # each family once, in order, as the campaign was created: parameters added since stay pinned
        self.spaces: list[SearchSpace] = campaign_spaces(db, families.values())
        self.seed_device = seed_model_device(db)   # the simulated H200 that orders its seeds, as created
        self.vendor_revision = vendor_mirrors_revision(db)   # what its vendor mirrors are, as created
        self.warm_state = db.get_meta("warm_start_policy")
        self.handpicked = db.get_meta("handpicked", [])
        self.seed_pool = db.get_meta("seed_pool", {})
        self.simulated: "bool | None" = db.get_meta("simulated")
        if self.simulated is None and evaluator is not None:
            self.simulated = bool(getattr(evaluator, "simulated", False))
        self.evaluator_description: "str | None" = db.get_meta("evaluator_description")
        self._pool = ThreadPoolExecutor(max_workers=self.window, thread_name_prefix="evogemm-propose")
        workers = int(getattr(getattr(config, "llm", None), "concurrency", 1) or 1)
        self._operator_pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="evogemm-operator") \
            if workers > 1 else None
        self._failures_saved: dict[str, int] = {}  # shape -> operator failures stored so far
        self.llm = make_gateway(config, db, self.plugins.providers)
        if self.llm is not None:
            self.llm.on_note = self.log
        self._started = time.monotonic()

    # -- setup ------------------------------------------------------------------------------------
    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = self._make_evaluator()
        return self._evaluator

    def _make_evaluator(self) -> Evaluator:
        ev, self.simulated, self.evaluator_description = make_campaign_evaluator(
            self.config, self.db, self.plugins, self.seed, self.log)
        return ev

    def close(self) -> None:
        pending = getattr(self._evaluator, "builds_pending", None) if self._own_evaluator else None
        if callable(pending) and pending():  # speculative builds: the cache keeps them for a later run
            self.log("closing: the builds still running finish first (queued ones are dropped)")
        self._pool.shutdown(wait=True)
        if self._operator_pool is not None:
            self._operator_pool.shutdown(wait=True)
        if self.llm is not None:
            self.llm.close()
        if self._own_evaluator and self._evaluator is not None:
            self._evaluator.close()

    # -- the campaign -----------------------------------------------------------------------------
    def run(self) -> dict[str, ShapeState]:
        try:
            if self.window > 1:
                self._side_by_side = max(1, min(self.window, self._lanes()))
                run_windowed(self, self.window, self._side_by_side)
            else:
                for idx, problem in enumerate(self.problems):
                    state = self._open_shape(idx, problem, self._inputs(idx))
                    if state is not None:
                        self._search_shape(state)
            self._first_pass_done = True
            while any([self._continue_shape(state) for state in list(self.states.values())]):
                pass  # shapes granted more budget by an extension go on, in shape order, until none can
            for state in self.states.values():  # one left open for a grant it could not take after all
                row = self.db.shape_row(state.name)
                if state.status == "done" and row is not None and row["status"] != "done":
                    self.db.finish_shape(state.name, state.done_reason or "done")
        finally:
            self._refresh()
        return self.states

    def _lanes(self) -> int:
        """How many shapes may run side by side: the evaluator's lanes (the simulator and the GPU
        backends have many: shapes on one GPU take turns on it; an evaluator without `lanes` has one).
        A campaign whose shapes are all done needs no evaluator."""
        rows = self.db.shape_rows()
        if self._evaluator is None and rows and all(r["status"] == "done" for r in rows):
            return 1
        return max(1, int(getattr(self.evaluator, "lanes", 1) or 1))

    def _inputs(self, idx: int) -> ShapeInputs:
        """What shape `idx` starts from: the shapes before idx - window + 1 (all done by then)."""
        first_open = idx - self.window + 1
        before = [p.name for p in self.problems[:max(0, first_open)]]
        policy = next((self.policy_states[name] for name in reversed(before) if name in self.policy_states),
                      self.warm_state) if self.window > 1 else \
            (self.last_policy_state if self.last_policy_state is not None else self.warm_state)
        reserved = [self.states[p.name].allocation for p in self.problems[max(0, first_open):idx]
                    if p.name in self.states]
        return ShapeInputs(solved={name: self.solved[name] for name in before if name in self.solved},
                           policy_state=policy, finished=[self.states[n] for n in before if n in self.states],
                           reserved=reserved)

    def _open_shape(self, idx: int, problem: Problem, inputs: ShapeInputs) -> "ShapeState | None":
        """Start a shape's bookkeeping (on the main thread, in shape order): its state and allocation;
        None when no family supports it (recorded as skipped)."""
        row = self.db.shape_row(problem.name) or {"status": "pending", "allocation": None, "reason": None,
                                                  "wall_seconds": 0.0}
        spaces = [s for s in self.spaces if s.supports(problem) is None]
        state = ShapeState(problem=problem, index=idx, allocation=row["allocation"] or {}, baselines=None)
        state.inputs = inputs
        self.states[problem.name] = state
        if not spaces:
            self._skip(state, row)
            return None
        ratio = self.config.population.family_prune_ratio
        if ratio and len(spaces) > 1:
            spaces, dropped = prune_families(spaces, problem, self.handpicked, ratio,
                                              order=model_order(problem, device=self.seed_device),
                                              fit_knobs=self.config.population.fit_knobs)
            if dropped:
                self.log(f"{problem.name}: left out (the model prices their fastest seed over {ratio:g}x the "
                         "fastest family's): " + ", ".join(f"{f} {t:.1f} us vs {b:.1f}" for f, t, b in dropped))
        if row["allocation"] is None:
            state.allocation = allocation(self.config.budget, len(self.problems) - idx, inputs.finished,
                                          self.db.wall_seconds(), inputs.reserved, side_by_side=self._side_by_side)
            self.db.start_shape(problem.name, state.allocation)
        state.wall_before = float(row.get("wall_seconds") or 0.0)
        state.spaces = spaces
        return state

    def _search_shape(self, state: ShapeState, lane: int = 0) -> None:
        """Search an opened shape to its end (on the main thread, or a lane's thread)."""
        problem = state.problem
        assign = getattr(self._evaluator, "assign", None) if self.window > 1 else None
        if assign is not None:
            assign(problem, lane)
        state.baselines = self.db.baselines(problem.name)
        if state.baselines is None:
            self.log(f"{problem.name}: measuring vendor baselines")
            self.db.record_baselines(self.evaluator.baselines(problem))
            state.baselines = self.db.baselines(problem.name)  # exactly what a resume will read
        state.status = "running"
        state.wall_started = time.monotonic()
        state.hof = make_hall_of_fame(self.config.population.hall_of_fame)
        if not self.simulated and hasattr(self.evaluator, "set_reference"):
            ref = self.evaluator.set_reference(problem, state.baselines)
            if ref:
                self.log(f"{problem.name}: search measurements are paired with {ref} (timed in the same rounds)")
        self.journal.load_recorded(state)
        state.strategy = self._make_strategy(state, state.spaces)
        bv = state.baselines.best("device") if state.baselines else None
        self.log(f"{problem.name}: start (allocation {fmt_allocation(state.allocation)}; best vendor "
                 f"{bv[0] + ' ' + format(bv[1], '.2f') + ' us' if bv else 'n/a'})"
                 + (f" on lane {lane}" if assign is not None else ""))
        self._refresh()
        self._finished(state, self._loop(state))

    def _continue_shape(self, state: ShapeState) -> bool:
        """Go on with a finished shape that has a budget grant it may take now; False if none."""
        if state.strategy is None or state.status != "done" or not self.grants.any_now(state, self._seq()):
            return False
        # progress: a grant taken, or (replaying) rounds recorded past the shape's first budget, where a
        # wall or GPU grant is not taken again because the recorded rounds come first
        before = (dict(state.grants_taken), state.rounds)
        state.status = "running"
        state.wall_before = float((self.db.shape_row(state.name) or {}).get("wall_seconds") or 0.0)
        state.wall_started = time.monotonic()
        # a shape that never ran a round (starved by the wall budget beside others) starts with its first
        reason = self._loop(state, first=state.rounds == 0)
        if (dict(state.grants_taken), state.rounds) == before:
            state.status = "done"
            return False
        self._finished(state, reason)
        return True

    def _finished(self, state: ShapeState, reason: str) -> None:
        problem = state.problem
        self._save_operator_failures(state)
        state.status, state.done_reason = "done", reason
        row = self.db.shape_row(problem.name)
        if (row is None or row["status"] != "done") and not self.grants.waiting(state):
            self.db.finish_shape(problem.name, reason)
        if not self.simulated and len(state.hof) and self.db.verified(state.name) is None:
            verify_hall_of_fame(state, self.evaluator, self.db, self.log)
        policy = getattr(state.strategy, "policy", None)
        with self._ui_lock:  # on_shape_done reads these from another shape's thread
            self.solved[problem.name] = [ind.genome for ind in state.hof]
            if policy is not None:
                self.policy_states[problem.name] = policy.state_dict()
                if self.window == 1 or state.index >= self._last_policy_index:
                    self.last_policy_state = self.policy_states[problem.name]
                    self._last_policy_index = state.index
        best = state.best
        self.log(f"{problem.name}: done ({reason}); {state.evaluations} evaluations"
                 + (f", {state.replayed} replayed from the database" if state.replayed else "")
                 + (f"; best {best.time_us:.2f} us, {state.speedup:.3f}x vs best vendor"
                    if best and state.speedup else "; no kernel passed" if not best else ""))
        self._refresh()
        if self.on_shape_done is not None:
            with self._ui_lock:
                self.on_shape_done(state)

    def _skip(self, state: ShapeState, row: dict) -> None:
        """No family of the campaign can run this shape: record why, say so, go on."""
        why = "; ".join(f"{s.family}: {s.supports(state.problem)}" for s in self.spaces)
        state.status, state.done_reason = "skipped", f"unsupported ({why})"
        if row["status"] != "done":
            self.db.finish_shape(state.name, state.done_reason)
        self.log(f"{state.name}: skipped, no family supports it ({why})")
        self._refresh()

    # -- rounds -----------------------------------------------------------------------------------
    def _seq(self) -> "int | None":
        """The proposal number grants are checked at (None when shapes run side by side)."""
        return None if self.window > 1 else self.journal.seq

    def _grants(self) -> Grants:
        """The grants a shape may take now (shapes side by side: none before every shape ran once)."""
        return self.grants if self.window == 1 or self._first_pass_done else NoGrants(self.grants)

    def _next(self, state: ShapeState, inflight: int, first: bool) -> "tuple[int, str | None]":
        return next_size(state, self.db, self._seq(), self.config.population, inflight, first, self._grants(),
                         recorded_here=self.window > 1 and self.journal.recorded_left(state),
                         round_seconds=self._rounds.estimate())

    def _prefetch(self, state: ShapeState, offspring: Sequence[Offspring]) -> None:
        """Start building the proposals that will need a measurement (when the evaluator builds)."""
        prefetch = getattr(self._evaluator, "prefetch", None)
        if prefetch is not None and offspring:
            todo = self.journal.unmeasured(state, offspring)
            if todo:
                prefetch(todo, state.problem)

    def _prefetch_early(self, state: ShapeState, children: Sequence[Offspring]) -> None:
        """The children of one operator call, as soon as it returns (on an operator thread): start
        their builds. A prefetch that fails is only a lost head start: evaluate builds them anyway
        and reports what goes wrong."""
        try:
            self._prefetch(state, children)
        except Exception:  # noqa: BLE001 - see the docstring
            pass

    def _save_operator_failures(self, state: ShapeState) -> None:
        """Store the strategy's operator failures not stored yet (main thread)."""
        failures = getattr(state.strategy, "operator_failures", None)
        saved = self._failures_saved.get(state.name, 0)
        if failures and len(failures) > saved:
            self.db.record_operator_failures(state.name, saved, failures[saved:])
            self._failures_saved[state.name] = len(failures)

    def _propose(self, state: ShapeState, n: int) -> list[Offspring]:
        """Ask the strategy (on the proposal thread), then start building what it proposed, behind
        the builds of the round being evaluated."""
        offspring = state.strategy.ask(n)
        self._prefetch(state, offspring)
        return offspring

    def _record(self, state: ShapeState, proposed: Sequence[Offspring]) -> "list[tuple[int, Offspring]] | None":
        """Record a proposed round, cut to its built genomes when builds would overrun the shape's wall
        share (evolution/round_cut.py); None when the cut leaves nothing of a round that had proposals."""
        kept = cut_to_built(state, proposed, self.db, self.journal, self._rounds, self._evaluator, self._seq(),
                            self._grants(), self.log)
        if proposed and not kept:
            return None
        return self.journal.record(state, kept)

    def _loop(self, state: ShapeState, first: bool = True) -> str:
        n, reason = self._next(state, 0, first=first)
        if n == 0:
            return reason or "nothing to do"
        batch = self._record(state, state.strategy.ask(n))
        if batch is None:
            return "wall-time budget spent"
        while batch:
            if self.stopping.is_set():
                raise CampaignStopped(f"{state.name}: stopped before round {state.rounds} (another shape failed)")
            new = self.journal.new_genomes(state, batch)
            self._prefetch(state, [off for _, off in batch])  # this round's builds go first in the pool
            future: "Future[list[Offspring]] | None" = None
            pipelined = state.rounds >= 1
            if pipelined:
                n_next, reason = self._next(state, len(new), first=False)
                if n_next > 0:
                    future = self._pool.submit(self._propose, state, n_next)
            state.round_builds = unbuilt(self._evaluator, [g for _, g in new if g.id not in state.recorded],
                                         state.problem)
            try:
                needs_evaluator = any(gid not in state.recorded for gid in (g.id for _, g in new))
                results = self.journal.evaluate(state, new, self.evaluator if needs_evaluator else None,
                                                self.config.evaluator.batch_size)
            finally:
                next_raw = future.result() if future is not None else None
            self._tell(state, batch, results)
            if not pipelined:
                n_next, reason = self._next(state, 0, first=False)
                next_raw = state.strategy.ask(n_next) if n_next > 0 else None
            if next_raw is None:
                return reason or "done"
            if not next_raw:
                return "the strategy proposed nothing new"
            batch = self._record(state, next_raw)
            if batch is None:
                return "wall-time budget spent"
        return "the strategy proposed nothing"

    def _tell(self, state: ShapeState, batch: Sequence[tuple[int, Offspring]], results: dict) -> None:
        new_ok: list[Individual] = []
        n_new = reused = failures = 0
        for _, off in batch:
            gid = off.genome.id
            if gid in results and gid not in state.measured:
                m = results[gid]
                state.measured[gid] = m
                state.evaluations += 1
                n_new += 1
                state.gpu_seconds += float(m.gpu_seconds or 0.0)
                fit = fitness_value(m, state.best_vendor_us) if m.ok else None
                if fit is not None:
                    new_ok.append(Individual(off.genome, m, fit, origin=off.operator))
                else:
                    state.failures[m.status] += 1
                    failures += 1
            else:
                m = state.measured[gid]
                reused += 1
                state.reused += 1
            state.strategy.tell(off, m)
        self._save_operator_failures(state)
        spent = getattr(state.strategy, "llm_tokens", None)
        if spent is not None:  # every request's tokens, once per call; else the children's (journal)
            state.tokens = int(spent)
        admit(state, new_ok, lambda: self.evaluator, self.db, self.log, confirm=not self.simulated)
        state.rounds += 1
        now = time.monotonic()
        if state.rounds >= 2 and state.round_told and n_new:  # a round after the first that measured something
            self._rounds.record(now - state.round_told, built=bool(state.round_builds))
        state.round_told = now
        state.stall = 0 if n_new else state.stall + 1
        self._report_round(state, n_new, reused, failures)
        self._refresh()
