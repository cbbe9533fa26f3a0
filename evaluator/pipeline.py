"""Builder/Runner pipeline (after TVM MetaSchedule): builds run in the compiler's pool while the GPU
times what is already built.

`prefetch(genomes)` starts builds early (the engine calls it as soon as the next round is
proposed, while the current round is being timed). `evaluate(genomes, problem)` waits for builds
one completion at a time and hands every batch of finished, successful builds to the runner at
once, so a round's first kernels are gated and timed while its last ones still compile. The
pipeline counts the runner's busy seconds (GPU time) and the builds it waited for, so a campaign
can show how busy the GPU was.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from genome import Genome, Problem

from .api import STATUS_COMPILE_FAILED, STATUS_INVALID, STATUS_REJECTED, Measurement
from .build_log import read_log_excerpt
from .compile import BuildResult

SpaceCheck = Callable[[Genome, Problem], "str | None"]  # None when the genome can run the problem


def space_check(families) -> SpaceCheck:
    """The SpaceCheck of a FamilyRegistry: the genome's family's rules for the problem (an unknown
    family says so)."""
    def check(genome: Genome, problem: Problem) -> "str | None":
        try:
            violations = families.resolve(genome.family).space.violations(genome, problem)
        except ValueError as exc:
            return str(exc)
        return "; ".join(map(str, violations)) or None
    return check


class Builder(Protocol):
    def submit(self, genome: Genome) -> "Future[BuildResult]": ...

    def pending(self) -> int:
        """Builds started and not finished yet."""
        ...


class Runner(Protocol):
    def run(self, problem: Problem, items: Sequence[tuple[Genome, BuildResult]]) -> "tuple[list[Measurement], float]":
        """One measurement per item, in order, and the GPU seconds the batch took."""
        ...


def build_failure(genome: Genome, problem: Problem, build: BuildResult) -> Measurement:
    """The measurement of a build that failed or was rejected, with the useful excerpt of its
    compiler log (a build cached before excerpts were kept: read from its log file)."""
    reason = build.reason or ""
    status = STATUS_REJECTED if reason.startswith("rejected") else (
        STATUS_INVALID if reason.startswith("invalid") else STATUS_COMPILE_FAILED)
    log = None
    if status != STATUS_INVALID:
        log = build.excerpt or read_log_excerpt(build.log)
    return Measurement(genome.id, problem.name, status, reason=build.reason, build_seconds=build.seconds,
                       build_key=build.build_key, log=log)


@dataclass
class PipelineStats:
    gpu_busy_seconds: float = 0.0
    gpu_seconds_during_builds: float = 0.0   # runner batches started while builds were in flight
    runner_batches: int = 0
    kernels_timed: int = 0

    def to_dict(self) -> dict:
        return {"gpu_busy_seconds": self.gpu_busy_seconds, "gpu_seconds_during_builds": self.gpu_seconds_during_builds,
                "runner_batches": self.runner_batches, "kernels_timed": self.kernels_timed}


class BuildRunPipeline:
    def __init__(self, builder: Builder, runner: Runner, check: SpaceCheck):
        self.builder = builder
        self.runner = runner
        self.check = check
        self.stats = PipelineStats()
        self._prefetched: dict[str, "Future[BuildResult]"] = {}
        self._lock = threading.Lock()

    def prefetch(self, genomes: Sequence[Genome], problem: "Problem | None" = None) -> int:
        """Start building genomes that can run `problem` (all valid ones without a problem);
        returns how many builds were started or joined. Safe to call from another thread."""
        started = 0
        for g in genomes:
            if problem is not None and self.check(g, problem):
                continue
            with self._lock:
                if g.id in self._prefetched:
                    continue
                self._prefetched[g.id] = self.builder.submit(g)
            started += 1
        return started

    def _future(self, genome: Genome) -> "Future[BuildResult]":
        with self._lock:
            future = self._prefetched.pop(genome.id, None)
        return future if future is not None else self.builder.submit(genome)

    def evaluate(self, genomes: Sequence[Genome], problem: Problem) -> list[Measurement]:
        out: dict[str, Measurement] = {}
        pending: dict[str, tuple[Genome, "Future[BuildResult]"]] = {}
        asked_again: set[str] = set()   # genomes whose build was lost once (BuildResult.lost)
        for g in genomes:
            if g.id in out or g.id in pending:
                continue
            why = self.check(g, problem)
            if why:
                out[g.id] = Measurement(g.id, problem.name, STATUS_INVALID, reason=why)
            else:
                pending[g.id] = (g, self._future(g))
        while pending:
            wait([f for _, f in pending.values()], return_when=FIRST_COMPLETED)
            ready: list[tuple[Genome, BuildResult]] = []
            for gid in [gid for gid, (_, f) in pending.items() if f.done()]:
                genome, future = pending.pop(gid)
                build = future.result()
                if build.ok:
                    ready.append((genome, build))
                elif build.lost and gid not in asked_again:
                    # the machine that built it was lost, not the kernel: asked once more before the
                    # campaign records a verdict (a second loss is recorded as the build's failure)
                    asked_again.add(gid)
                    pending[gid] = (genome, self.builder.submit(genome))
                else:
                    out[gid] = build_failure(genome, problem, build)
            if ready:
                building = self.builder.pending() > 0
                measurements, seconds = self.runner.run(problem, ready)
                with self._lock:  # shapes side by side share the pipeline (evolution/windows.py)
                    self.stats.gpu_busy_seconds += seconds
                    if building:
                        self.stats.gpu_seconds_during_builds += seconds
                    self.stats.runner_batches += 1
                    self.stats.kernels_timed += len(ready)
                for (genome, _), m in zip(ready, measurements):
                    out[genome.id] = m
        return [out[g.id] for g in genomes]
