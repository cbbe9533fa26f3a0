"""Budgets: each shape's allocation when it starts, and how many proposals the next round asks.

`evaluations_per_shape` is fixed per shape; `total_evaluations`, `gpu_seconds`, `wall_seconds` and
`llm_tokens` are shared fairly (what is left / shapes left), so what one shape leaves unspent goes
to the next. Evaluation counts are exact; time and token limits are checked before each round.
Decisions that depend on the clock are replayed from the database on resume, not re-decided.

Budget grants (`evogemm extend`, meta "extensions"): a shape that had started when the budget was
raised keeps its recorded allocation (so a replay re-generates its rounds exactly) and gets
grants instead: when its budget of a kind runs out, it takes its next grant of that kind, but only
where the recorded run did too, i.e. not while the next recorded proposal belongs to another
shape. Grants never change the shapes table; they are re-taken on every replay, in order.
"""

from __future__ import annotations

import math
import statistics

from typing import Any, Callable, Iterable, Mapping

from .db import CampaignDB
from .shape_state import ShapeState

GRANT_KINDS = ("evaluations", "gpu_seconds", "wall_seconds")


class BudgetCannotEnd(ValueError):
    """The campaign's only limits are ones its run never spends: it would not stop."""


def unending_budget(budget: Any, simulated: "bool | None", calls_models: bool) -> "str | None":
    """Why no limit of `budget` can ever stop the campaign, or None. Evaluations and wall time always
    run out; GPU seconds not on the simulator (it spends none; `simulated` None: not known yet); LLM
    tokens not when no operator calls a model."""
    if any(getattr(budget, k) is not None for k in ("evaluations_per_shape", "total_evaluations", "wall_seconds")):
        return None
    if budget.gpu_seconds is not None and simulated is not True:
        return None
    if budget.llm_tokens is not None and calls_models:
        return None
    whys = {"gpu_seconds": "the simulator spends no GPU time", "llm_tokens": "no operator calls a model"}
    never = [k for k in whys if getattr(budget, k) is not None]
    return (f"{' and '.join(never)} would never run out ({'; '.join(whys[k] for k in never)}), "
            "so the campaign would not stop: set evaluations_per_shape, total_evaluations or wall_seconds")


def refuse_unending(config: Any, simulated: "bool | None", before: "Callable[[], Any]" = lambda: None) -> None:
    """Raise BudgetCannotEnd (after `before()`, e.g. closing the evaluator) when no limit of the campaign's
    budget can stop it (`unending_budget`)."""
    never = unending_budget(config.budget, simulated, any(op.model for op in config.operators))
    if never is not None:
        before()
        raise BudgetCannotEnd("budget: " + never)


class Grants:
    """The budget grants of a campaign's extensions, per shape and kind, in the order made."""

    def __init__(self, extensions: "Iterable[dict] | None", db: CampaignDB, log: Callable[[str], None]):
        self.db = db
        self.log = log
        self.pending: dict[str, dict[str, list[float]]] = {}
        for ext in extensions or []:
            for shape, grant in (ext.get("grants") or {}).items():
                for kind, extra in grant.items():
                    if kind in GRANT_KINDS and extra:
                        self.pending.setdefault(shape, {}).setdefault(kind, []).append(extra)

    def waiting(self, state: ShapeState) -> bool:
        """The shape has grants it has not taken yet (it may take them after other shapes)."""
        return any(state.grants_taken.get(kind, 0) < len(extra)
                   for kind, extra in self.pending.get(state.name, {}).items())

    def take(self, state: ShapeState, kind: str, seq: "int | None", check_only: bool = False,
             recorded_here: bool = False) -> bool:
        """Take the shape's next grant of `kind` if it has one and may take it at proposal `seq`
        (None: shapes searched side by side, whose grants wait until every shape ran once, and
        `recorded_here` says whether the shape's next proposal is in the record)."""
        extra = self.pending.get(state.name, {}).get(kind, [])
        taken = state.grants_taken.get(kind, 0)
        if taken >= len(extra) or state.allocation.get(kind) is None:
            return False
        recorded = self.db.proposal(seq) if seq is not None else None
        if recorded is not None and recorded["problem"] != state.name:
            return False  # the recorded run went on with another shape here: the grant comes later
        if check_only:
            return True
        state.allocation = dict(state.allocation, **{kind: state.allocation[kind] + extra[taken]})
        state.grants_taken[kind] = taken + 1
        row = self.db.shape_row(state.name)
        if recorded is None and not recorded_here and row is not None and row["status"] == "done":
            self.db.reopen_shape(state.name)  # only past everything recorded
        self.log(f"{state.name}: budget grant {taken + 1} of {len(extra)}: {kind} +{extra[taken]:g} "
                 f"(now {state.allocation[kind]:g})")
        return True

    def any_now(self, state: ShapeState, seq: "int | None") -> bool:
        return any(self.take(state, kind, seq, check_only=True) for kind in GRANT_KINDS)


class NoGrants(Grants):
    """No grant is taken now: shapes searched side by side take theirs only after every shape ran
    once, so no shape's budget end depends on when another shape started."""

    def __init__(self, grants: Grants):
        super().__init__(None, grants.db, grants.log)
        self.pending = grants.pending

    def take(self, state: ShapeState, kind: str, seq: "int | None", check_only: bool = False,
             recorded_here: bool = False) -> bool:
        return False


def allocation(budget: Any, shapes_left: int, states: Iterable[ShapeState], wall_used: float,
               reserved: Iterable[Mapping[str, Any]] = (), side_by_side: int = 1) -> dict[str, Any]:
    """The budget of the next shape to start, given what the shapes before it used, and the
    allocations `reserved` by shapes still running beside it (counted as spent in full, so the
    split does not depend on how far they got). With `side_by_side` shapes really running at once,
    wall time is shared, not summed: the shape gets the wall left over the ceil(shapes_left /
    side_by_side) turns still to come, and the wall of the shapes beside it is not reserved (it
    passes while this one runs)."""
    states = list(states)
    reserved = list(reserved)
    used_evals = sum(s.evaluations for s in states) + sum(r.get("evaluations") or 0 for r in reserved)
    used_gpu = sum(s.gpu_seconds for s in states) + sum(r.get("gpu_seconds") or 0.0 for r in reserved)
    used_tokens = sum(s.tokens for s in states) + sum(r.get("llm_tokens") or 0 for r in reserved)
    left = max(1, shapes_left)
    alloc: dict[str, Any] = {"evaluations": budget.evaluations_per_shape}
    if budget.total_evaluations is not None:
        remaining = max(0, budget.total_evaluations - used_evals)
        share = remaining // left if left > 1 else remaining
        alloc["evaluations"] = share if alloc["evaluations"] is None else min(alloc["evaluations"], share)
    alloc["gpu_seconds"] = None if budget.gpu_seconds is None else max(0.0, budget.gpu_seconds - used_gpu) / left
    if side_by_side > 1:
        used_wall, turns = wall_used, math.ceil(left / side_by_side)
    else:
        used_wall, turns = wall_used + sum(r.get("wall_seconds") or 0.0 for r in reserved), left
    alloc["wall_seconds"] = None if budget.wall_seconds is None else max(0.0, budget.wall_seconds - used_wall) / turns
    alloc["llm_tokens"] = None if budget.llm_tokens is None else max(0, budget.llm_tokens - used_tokens) // left
    return alloc


def round_size(strategy: Any, population: Any, first: bool) -> int:
    if first and hasattr(strategy, "initial_size"):
        return int(strategy.initial_size)
    if hasattr(strategy, "round_size"):
        return int(strategy.round_size)
    return population.offspring_per_island * population.islands


def round_estimate(durations: "list[float]", last: int = 8, least: int = 2) -> "float | None":
    """The wall seconds a round after the first is expected to take: the median of the last `last`
    such rounds of the campaign (this session), or None before `least` were timed."""
    recent = durations[-last:]
    return statistics.median(recent) if recent and len(recent) >= least else None


def next_size(state: ShapeState, db: CampaignDB, seq: "int | None", population: Any, inflight: int,
              first: bool, grants: Grants, recorded_here: bool = False,
              round_seconds: "float | None" = None) -> "tuple[int, str | None]":
    """How many to ask for next (0 = the shape is done, with the reason). `seq`: the next proposal's
    global number (shapes in turn); None when shapes run side by side, where `recorded_here` says
    whether the shape's next proposal is in the record.

    With a wall budget and `round_seconds` (what a round after the first has been taking, see
    `round_estimate`), a round after the first starts only if it is expected to end within the
    shape's wall allocation plus half a round, counting the round still in flight when `inflight`:
    otherwise each round that waits on nvcc overruns a small allocation by a whole round, and the
    shapes after it start with nothing left (on the H200 the public campaign with its screen
    reached 10 and 9 of its 14 shapes per half, the others at 0 evaluations). Once a round has been
    asked, the engine also drops it if it needs builds that would overrun (`build_round_fits`): this
    median mixes rounds that build with quick ones."""
    n = round_size(state.strategy, population, first)
    while state.allocation.get("evaluations") is not None and \
            state.allocation["evaluations"] - state.evaluations - inflight <= 0:
        if not grants.take(state, "evaluations", seq, recorded_here=recorded_here):
            return 0, "evaluation budget spent"
    while state.allocation.get("gpu_seconds") is not None and state.gpu_seconds >= state.allocation["gpu_seconds"]:
        if not grants.take(state, "gpu_seconds", seq, recorded_here=recorded_here):
            return 0, "GPU-time budget spent"
    alloc = state.allocation
    if alloc.get("evaluations") is not None:
        n = min(n, alloc["evaluations"] - state.evaluations - inflight)
    if alloc.get("llm_tokens") is not None and state.tokens >= alloc["llm_tokens"]:
        return 0, "LLM-token budget spent"
    if state.stall >= population.max_stall_rounds:
        return 0, f"no new genome in {state.stall} rounds"
    if seq is None:  # shapes side by side: the record is read per shape
        if recorded_here:
            return n, None  # replay: the recorded run went on with this shape
    else:
        recorded = db.proposal(seq)
        if recorded is not None:
            if recorded["problem"] == state.name:
                return n, None  # replay: the recorded run went on here
            return 0, db.shape_row(state.name)["reason"] or "stopped (recorded)"
    row = db.shape_row(state.name)
    if row and row["status"] == "done" and not (row["reason"] == "wall-time budget spent"
                                                and grants.take(state, "wall_seconds", seq,
                                                                recorded_here=recorded_here)):
        return 0, row["reason"] or "stopped (recorded)"
    ahead = round_seconds * (0.5 + (1.0 if inflight else 0.0)) if round_seconds and state.rounds >= 1 else 0.0
    if not _wall_covers(state, ahead, grants, seq, recorded_here):
        return 0, "wall-time budget spent"
    return n, None


def _wall_covers(state: ShapeState, ahead: float, grants: Grants, seq: "int | None", recorded_here: bool) -> bool:
    """Whether the shape's wall allocation, with the grants it may take now, covers `ahead` more seconds."""
    while state.allocation.get("wall_seconds") is not None and \
            state.wall_seconds() + ahead >= state.allocation["wall_seconds"]:
        if not grants.take(state, "wall_seconds", seq, recorded_here=recorded_here):
            return False
    return True


def build_round_fits(state: ShapeState, db: CampaignDB, seq: "int | None", grants: Grants,
                     build_round_seconds: float, recorded_here: bool = False) -> bool:
    """Whether a round already asked, whose proposals need builds, may run: it is expected to end (a
    round that waited on nvcc takes `build_round_seconds`) within the shape's wall allocation plus
    half a round, with any grant the shape may take; always during a replay of recorded proposals
    (`seq`, `recorded_here` as for `next_size`). `next_size` decides before a round is asked, from
    the median of all rounds: rounds of runtime-knob moves (a second or two) pull it far below a
    round that builds (30-90 s on the H200), and such a round overran its shape's share threefold and
    left the campaign's last shape at 0 evaluations (docs/results/h200-prune-ab)."""
    if seq is None:
        if recorded_here:
            return True
    else:
        recorded = db.proposal(seq)
        if recorded is not None and recorded["problem"] == state.name:
            return True
    return _wall_covers(state, 0.5 * build_round_seconds, grants, seq, recorded_here=False)
