"""How long the rounds after a shape's first take (this session), for the wall budget's decisions:
all of them (`budget.next_size`, before a round is asked) and those that waited on nvcc
(`budget.build_round_fits`, once a round is asked); and how many of a round's genomes wait on nvcc."""

from __future__ import annotations

import threading
from typing import Any, Sequence

from genome import Genome, Problem

from .budget import round_estimate


class RoundClock:
    """The wall seconds of each round after a shape's first, and of those that waited on builds.
    Thread-safe (shapes searched side by side record into one clock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._all: list[float] = []
        self._built: list[float] = []

    def record(self, seconds: float, built: bool) -> None:
        with self._lock:
            self._all.append(seconds)
            if built:
                self._built.append(seconds)

    def estimate(self) -> "float | None":
        """A round's expected length: the median of the recent rounds (None before two)."""
        with self._lock:
            return round_estimate(self._all)

    def build_estimate(self, evaluator: Any = None) -> "float | None":
        """A round that waits on nvcc: the median of the recent such rounds (one says enough); before
        any, what one build takes (`evaluator.build_seconds_prior`: this session's builds, else the
        kernel cache's made on this host, else those carried from elsewhere), asked each time since it
        improves as builds finish, so that a short wall share is not overrun by the first round that
        builds either."""
        with self._lock:
            timed = round_estimate(self._built, least=1)
        if timed is not None or evaluator is None:
            return timed
        read = getattr(evaluator, "build_seconds_prior", None)
        try:
            value = read() if read is not None else None
        except Exception:  # noqa: BLE001 - no prior: the rule waits for a timed round
            return None
        return float(value) if value is not None else None


def unbuilt(evaluator: Any, genomes: Sequence[Genome], problem: Problem) -> int:
    """How many of `genomes` have no build yet (`evaluator.unbuilt`; 0 when the evaluator does not
    build or cannot say)."""
    count = getattr(evaluator, "unbuilt", None)
    if count is None or not genomes:
        return 0
    try:
        return int(count(genomes, problem))
    except Exception:  # noqa: BLE001 - a check that fails only leaves the round to next_size's rule
        return 0
