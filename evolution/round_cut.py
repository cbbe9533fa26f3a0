"""A round whose new kernels' builds would overrun its shape's wall share, cut to the genomes that
are built already (runtime-knob moves, seeds from earlier shapes): they take seconds and go on using
the share. The engine asks for the cut once a round is proposed and before it is recorded.

- The price of a round that builds is `RoundClock.build_estimate` (the rounds that built so far,
  else what nvcc takes on this machine); whether it fits is `budget.build_round_fits`.
- An empty cut ends the shape; a shape's first round with nothing built is kept whole (it could not
  start otherwise). Never decided during a replay of recorded proposals.
- A cut is stored (event `round_cut`, with the round's proposals), and a resume that re-generates the
  same round applies it without deciding again. An empty cut is not re-applied: the record already
  ends the shape there (its next proposals are another shape's, or none), and a budget grant that lets
  the shape go on must see the round decided anew.
- The strategy is told which children were left out (`forget`), so that an arm whose child is never
  measured is not counted as a pull in flight (UCB's pending count).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from genome import Genome, Offspring, Problem

from .budget import Grants, build_round_fits
from .db import CampaignDB
from .journal import Journal
from .round_clock import RoundClock, unbuilt
from .shape_state import ShapeState


def waiting_on_nvcc(evaluator: Any, genomes: Sequence[Genome], problem: Problem) -> set[str]:
    """The ids of `genomes` that have no build yet (asked one by one through `unbuilt`)."""
    if getattr(evaluator, "unbuilt", None) is None:
        return set()
    return {g.id for g in genomes if unbuilt(evaluator, [g], problem)}


def _stored(db: CampaignDB, state: ShapeState, asked: list[str]) -> "set[str] | None":
    """The ids a stored non-empty cut of this very round kept, or None."""
    stored = [e["data"] for e in db.events("round_cut") if e["problem"] == state.name
              and e["data"].get("round") == state.rounds and e["data"].get("proposed") == asked
              and e["data"]["kept"]]
    return set(stored[-1]["kept"]) if stored else None


def cut_to_built(state: ShapeState, proposed: Sequence[Offspring], db: CampaignDB, journal: Journal,
                 clock: RoundClock, evaluator: Any, seq: "int | None", grants: Grants,
                 log: Callable[[str], None]) -> list[Offspring]:
    """The round about to be recorded, without its genomes that wait on nvcc when their builds would
    overrun the shape's wall share (see the module's docstring). `seq`: the next proposal's global
    number, None when shapes run side by side (as for `budget.next_size`)."""
    rnd = state.rounds
    asked = [off.genome.id for off in proposed]
    kept_ids = _stored(db, state, asked)
    if kept_ids is not None:
        return _left_out(state, proposed, [off for off in proposed if off.genome.id in kept_ids])
    estimate = clock.build_estimate(evaluator)
    if estimate is None or state.allocation.get("wall_seconds") is None:
        return list(proposed)
    waiting = waiting_on_nvcc(evaluator, journal.unmeasured(state, proposed), state.problem)
    kept = [off for off in proposed if off.genome.id not in waiting]
    if not waiting or (rnd == 0 and not kept) or build_round_fits(
            state, db, seq, grants, estimate, recorded_here=seq is None and journal.recorded_left(state)):
        return list(proposed)
    db.event("round_cut", state.name, {"round": rnd, "proposed": asked, "kept": [off.genome.id for off in kept],
                                       "left_out": sorted(waiting), "estimate_s": estimate})
    share = f"the shape's wall share is {state.allocation['wall_seconds']:.0f} s, {state.wall_seconds():.0f} s used"
    if kept:
        log(f"{state.name}: round {rnd}: {len(waiting)} of its genomes wait on nvcc (~{estimate:.0f} s a round "
            f"that builds; {share}); left out, its {len(kept)} built ones measured")
    else:
        log(f"{state.name}: the next round waits on nvcc (~{estimate:.0f} s a round that builds); left out: {share}")
    return _left_out(state, proposed, kept)


def _left_out(state: ShapeState, proposed: Sequence[Offspring], kept: list[Offspring]) -> list[Offspring]:
    """`kept`, after telling the strategy which of `proposed` it will never be told of (`forget`, optional
    in the SearchStrategy protocol): their arms' pulls are released."""
    forget = getattr(state.strategy, "forget", None)
    if forget is not None:
        ids = {id(off) for off in kept}
        for off in proposed:
            if id(off) not in ids:
                forget(off)
    return kept
