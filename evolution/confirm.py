"""Admission to a shape's hall of fame: a second, independent measurement first.

The best of many noisy draws is biased low (the winner's curse): a genome that timed well once
may have been lucky. On a GPU campaign a genome that would enter the hall of fame is measured once
more (paired with the shape's reference baseline, like every search measurement), and the hall
holds that confirming measurement, not the search's. A confirmation whose reference baseline moved
beyond what the clock explains (`pairing` "run" or "raw", evaluator/paired.py) is measured once
more, and the steadier or else the slower of the two stands. Confirmations are stored in the
campaign database, so a resumed campaign replays them instead of measuring again.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from evaluator.api import Measurement

from .db import CampaignDB
from .population import Individual, fitness_value, rank_key
from .shape_state import ShapeState


def entrants(hof, candidates: Sequence[Individual]) -> list[Individual]:
    """The candidates that would enter the hall of fame now, best first."""
    held = {ind.id for ind in hof}
    ranked = sorted((c for c in candidates if c.id not in held), key=lambda i: rank_key(i.time_us, i.id))
    room = hof.maxsize - len(hof)
    worst = hof[-1].fitness if len(hof) else None
    out = []
    for ind in ranked[:hof.maxsize]:
        if room > 0 or worst is None or ind.fitness > worst:
            out.append(ind)
            room -= 1
    return out


UNSTEADY_PAIRINGS = ("run", "raw")  # evaluator.paired.paired_figure: the reference moved beyond the clock


def _unsteady(m: Measurement) -> bool:
    return bool(m.ok and m.paired and m.paired.get("pairing") in UNSTEADY_PAIRINGS)


def _steadier(first: Measurement, second: Measurement) -> Measurement:
    """Of two confirming measurements of one genome, the first of which had an unsteady reference:
    the second when it failed (a failure is never averaged away) or its reference was steady, else
    the slower of the two (a kernel may be under-rated; a fake winner is not admitted)."""
    if not second.ok or not _unsteady(second):
        return second
    return max((first, second), key=lambda m: m.time_us)


def admit(state: ShapeState, candidates: Sequence[Individual], evaluator: Callable[[], Any], db: CampaignDB,
          log: Callable[[str], None], confirm: bool) -> None:
    """Put the round's successful genomes into the hall of fame; with `confirm`, only through a
    confirming measurement, which is what the hall then holds. `evaluator()` gives the evaluator
    (made on first use: a replay whose confirmations are all stored needs none)."""
    if not confirm:
        state.hof.update(list(candidates))
        return
    todo = entrants(state.hof, candidates)
    if not todo:
        return
    confirmed = {}
    missing = []
    for ind in todo:
        stored = db.confirmation(ind.id, state.name)
        if stored is None:
            missing.append(ind)
        else:
            confirmed[ind.id] = stored
    retried: list[str] = []
    if missing:
        first = evaluator().evaluate([ind.genome for ind in missing], state.problem)
        state.gpu_seconds += sum(float(m.gpu_seconds or 0.0) for m in first)
        measured = dict(zip([ind.id for ind in missing], first))
        unsteady = [ind for ind in missing if _unsteady(measured[ind.id])]
        if unsteady:  # the reference moved beyond what the clock explains: measure those once more
            again = evaluator().evaluate([ind.genome for ind in unsteady], state.problem)
            state.gpu_seconds += sum(float(m.gpu_seconds or 0.0) for m in again)
            for ind, m2 in zip(unsteady, again):
                measured[ind.id] = _steadier(measured[ind.id], m2)
                retried.append(ind.id[:8])
        for ind in missing:
            m = measured[ind.id]
            m.problem = state.name
            db.record_confirmation(m)
            confirmed[ind.id] = m
    admitted, lines = [], []
    for ind in todo:
        m = confirmed[ind.id]
        fit = fitness_value(m, state.best_vendor_us) if m.ok else None
        if fit is None:
            lines.append(f"{ind.id[:8]} {ind.time_us:.2f} us -> refused ({m.status}: {m.reason})")
            continue
        admitted.append(Individual(ind.genome, m, fit, origin=ind.origin))
        lines.append(f"{ind.id[:8]} {ind.time_us:.2f} -> {m.time_us:.2f} us")
    state.hof.update(admitted)
    if missing:
        log(f"{state.name}: confirmed {len(admitted)}/{len(todo)} hall-of-fame entrant(s): " + "; ".join(lines)
            + (f" (measured twice, the reference unsteady the first time: {', '.join(retried)})" if retried else ""))
