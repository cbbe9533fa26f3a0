"""What the engine tracks about one shape while it runs (rebuilt by replay on resume)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from evaluator.api import BaselineSet, Measurement
from genome import Problem

from .population import Individual, rank_key


@dataclass
class ShapeInputs:
    """What a shape starts from, fixed when it is opened (so shapes searched side by side see the
    same inputs whatever order their threads run in): the halls of fame of the shapes it may seed
    from, the selection policy it warm-starts from, and what its budget share is computed from
    (shapes done before it, and the allocations of shapes still running beside it)."""
    solved: dict[str, list[Any]]
    policy_state: Any
    finished: list[Any]
    reserved: list[dict[str, Any]]


@dataclass
class ShapeState:
    problem: Problem
    index: int
    allocation: dict[str, Any]
    baselines: "BaselineSet | None"
    strategy: Any = None
    hof: Any = None
    measured: dict[str, Measurement] = field(default_factory=dict)
    recorded: set[str] = field(default_factory=set)  # genome ids the database measured here before
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
    round_told: float = 0.0          # monotonic time the shape's last round was told (this session)
    round_builds: int = 0            # genomes of the round being evaluated that had no build yet (nvcc)
    replayed: int = 0                # evaluations served from the database on resume
    done_reason: "str | None" = None
    status: str = "pending"
    grants_taken: dict[str, int] = field(default_factory=dict)  # budget grants taken, per kind
    inputs: "ShapeInputs | None" = None
    spaces: list[Any] = field(default_factory=list)  # the campaign's search spaces that support the shape

    @property
    def name(self) -> str:
        return self.problem.name

    @property
    def best_vendor_us(self) -> "float | None":
        return self.baselines.best_vendor_us if self.baselines else None

    @property
    def best(self) -> "Individual | None":
        if self.hof is None or not len(self.hof):
            return None
        return min(self.hof, key=lambda ind: rank_key(ind.time_us, ind.id))

    @property
    def speedup(self) -> "float | None":
        """Best vendor time / best kernel time (None without either)."""
        if self.best is None or not self.best_vendor_us:
            return None
        return self.best_vendor_us / self.best.time_us

    def wall_seconds(self) -> float:
        extra = time.monotonic() - self.wall_started if self.status == "running" and self.wall_started else 0.0
        return self.wall_before + extra


def fmt_allocation(alloc: Mapping[str, Any]) -> str:
    parts = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in alloc.items() if v is not None]
    return ", ".join(parts) or "unlimited"
