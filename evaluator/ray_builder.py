"""Builds as Ray tasks: the `Builder` of the pipeline (evaluator/pipeline.py) spread over a Ray
cluster's CPUs.

Each build is a Ray task that asks for one CPU, the build's peak memory and no GPU, and runs the
same `Compiler.build` on the worker (render -> nvcc -> the worker's content-keyed cache). The task
returns the BuildResult with the cache entry's files (kernel.so, build.log, meta.json), so the
compiled kernel travels through Ray's object store and the driver writes it into its own cache
under the same key: no shared filesystem is needed. Where the cache folder is shared (one
machine, or a cluster with a shared filesystem) `ship_libraries=False` skips the bytes.

A worker that dies mid-build (the task fails with a system error) is retried `max_retries` times
by Ray; a build that is still lost after that becomes a failed BuildResult that says so, never an
exception. Like `Compiler.submit`, one task runs per build key however often it is asked for, and
a key already in the driver's cache costs no task at all.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genome import Genome
from templates import FamilyRegistry

from .cache_entry import entry_files, publish_files
from .compile import BUILD_GB, DEFAULT_TIMEOUT_S, BuildResult, Compiler, Toolchain, ToolchainError, _copy_for

RAY_INSTALL_HINT = "pip install 'evogemm[ray]'"


def import_ray() -> Any:
    """The ray module, or a clear error naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"the Ray evaluator backend needs Ray: {RAY_INSTALL_HINT}") from exc
    return ray


@dataclass(frozen=True)
class CompilerSpec:
    """What a worker needs to build like the driver's Compiler (a Compiler holds a lock and a pool,
    so it does not travel; this does)."""

    cache_dir: str
    toolchain: "Toolchain | None" = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    extra_flags: tuple[str, ...] = ()
    reject_spills: bool = True
    families: "FamilyRegistry | None" = None

    def compiler(self) -> Compiler:
        return Compiler(cache_dir=Path(self.cache_dir), toolchain=self.toolchain, jobs=1, timeout_s=self.timeout_s,
                        extra_flags=self.extra_flags, reject_spills=self.reject_spills, families=self.families)


@dataclass(frozen=True)
class WorkerBuild:
    """What one build task returns: the result as the worker's compiler wrote it, the files of
    its cache entry (empty when the result is not cached, e.g. a timeout), and where it ran."""

    result: dict
    files: dict[str, bytes]
    node: str
    pid: int
    seconds: float


def build_on_worker(spec: CompilerSpec, genome: Genome, ship: bool) -> WorkerBuild:
    """The body of a build task (runs on a Ray worker)."""
    start = time.monotonic()
    compiler = spec.compiler()
    result = compiler.build(genome)
    files: dict[str, bytes] = {}
    if ship and result.build_key:
        entry = compiler.entry_dir(result.build_key)
        if (entry / "meta.json").exists():
            files = entry_files(entry)
    return WorkerBuild(result.to_dict(), files, socket.gethostname(), os.getpid(), time.monotonic() - start)


@dataclass
class BuildStats:
    submitted: int = 0        # build tasks started
    finished: int = 0         # build tasks that came back (ok or not)
    lost: int = 0             # builds whose worker was lost past the retries
    served_from_cache: int = 0
    build_seconds: float = 0.0
    first_submit: "float | None" = None
    last_finish: "float | None" = None
    where: dict[str, int] = field(default_factory=dict)  # "host:pid" -> builds it ran

    def builds_per_minute(self) -> float:
        if self.first_submit is None or self.last_finish is None or self.finished == 0:
            return 0.0
        return 60.0 * self.finished / max(1e-6, self.last_finish - self.first_submit)


class RayBuilder:
    """The pipeline's Builder on Ray. `compiler` is the driver's (its cache, families, flags and
    toolchain); `worker_cache_dir` is where workers build (default: the same path, right on one
    machine or with a shared filesystem)."""

    def __init__(self, compiler: Compiler, build_memory_gb: float = BUILD_GB, max_retries: int = 2,
                 ship_libraries: bool = True, worker_cache_dir: "str | Path | None" = None):
        self.ray = import_ray()
        if build_memory_gb <= 0:
            raise ValueError("build_memory_gb must be > 0")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.compiler = compiler
        self.max_retries = int(max_retries)
        self.ship = bool(ship_libraries)
        self.worker_cache_dir = str(Path(worker_cache_dir).absolute()) if worker_cache_dir else str(compiler.cache_dir)
        self._task = self.ray.remote(build_on_worker).options(
            num_cpus=1, num_gpus=0, memory=int(build_memory_gb * 1024 ** 3), max_retries=self.max_retries,
            retry_exceptions=False)
        self._spec: "CompilerSpec | None" = None
        self._inflight: dict[str, "Future[BuildResult]"] = {}
        self._refs: dict[str, Any] = {}  # key -> ObjectRef of the build task in flight
        self._lock = threading.RLock()  # RLock: a ref already done runs its callback inside submit
        self._closed = False            # after close(): no new build task starts
        self.stats = BuildStats()

    # -- the toolchain: the driver's, else asked of a worker (a driver without nvcc) ----------
    def spec(self) -> CompilerSpec:
        with self._lock:  # prefetch threads and the engine's thread may ask first at once
            return self._spec or self._make_spec()

    def _make_spec(self) -> CompilerSpec:
        if self._spec is None:
            try:
                tools = self.compiler.tools
            except ToolchainError:
                tools = self.ray.get(self.ray.remote(Toolchain.discover).options(num_cpus=1, num_gpus=0).remote())
                self.compiler.toolchain = tools
                self.compiler._toolchain = tools
            c = self.compiler
            self._spec = CompilerSpec(self.worker_cache_dir, tools, c.timeout_s, tuple(c.extra_flags),
                                      c.reject_spills, c.families)
        return self._spec

    # -- the Builder protocol -------------------------------------------------------------------
    def submit(self, genome: Genome) -> "Future[BuildResult]":
        spec = self.spec()
        key = self.compiler.key_of(genome)
        mine: "Future[BuildResult]" = Future()
        if key.startswith("genome:"):  # does not render: the compiler says why, no task needed
            mine.set_result(self.compiler.build(genome))
            return mine
        hit = self.compiler._lookup(key)
        if hit is not None:
            hit.genome_id, hit.cached = genome.id, True
            self._set_knobs(hit, genome)
            with self._lock:
                self.stats.served_from_cache += 1
            mine.set_result(self.compiler.vet(genome, hit))
            return mine
        with self._lock:
            if self._closed:  # shutting down: asked again for a build close() cancelled, start nothing
                mine.set_result(BuildResult(genome.id, key, ok=False, lost=True,
                                            reason="build lost: the Ray builder was closed"))
                return mine
            shared = self._inflight.get(key)
            stale = shared is not None and shared.done() and (shared.result().lost or
                                                              "timed out" in (shared.result().reason or ""))
            if shared is None or stale:  # a lost or timed-out build is started afresh when asked again
                shared = self._start(spec, genome, key)
                self._inflight[key] = shared

        def deliver(done: "Future[BuildResult]") -> None:
            result = _copy_for(done.result(), genome.id)  # _start's future never raises
            self._set_knobs(result, genome)
            try:
                mine.set_result(self.compiler.vet(genome, result))
            except Exception as exc:  # noqa: BLE001 - handed to the waiting caller, never lost in a callback
                mine.set_exception(exc)

        shared.add_done_callback(deliver)
        return mine

    def pending(self) -> int:
        with self._lock:
            for key in [k for k, f in self._inflight.items() if f.done()]:
                del self._inflight[key]
                self._refs.pop(key, None)
            return len(self._inflight)

    def _start(self, spec: CompilerSpec, genome: Genome, key: str) -> "Future[BuildResult]":
        now = time.monotonic()
        self.stats.submitted += 1
        if self.stats.first_submit is None:
            self.stats.first_submit = now
        ref = self._task.remote(spec, genome, self.ship)
        self._refs[key] = ref
        out: "Future[BuildResult]" = Future()

        def done(remote: Future) -> None:
            try:
                result = self._receive(remote.result(), key)
            except Exception as exc:  # noqa: BLE001 - a lost worker or node: a failed build, never a crash
                result = self._lost(genome, key, exc)
            with self._lock:
                self.stats.finished += 1
                self.stats.last_finish = time.monotonic()
                self.stats.build_seconds += result.seconds if not result.cached else 0.0
            out.set_result(result)

        ref.future().add_done_callback(done)
        return out

    def _receive(self, shipped: WorkerBuild, key: str) -> BuildResult:
        with self._lock:
            where = f"{shipped.node}:{shipped.pid}"
            self.stats.where[where] = self.stats.where.get(where, 0) + 1
        if shipped.files:
            publish_files(self.compiler.cache_dir, key, shipped.files)
        result = self.compiler._lookup(key)  # the driver's copy, with paths in the driver's cache
        remote = BuildResult(**shipped.result)
        if result is None:  # not cached by the worker (a timeout), or a shared cache not shipped
            return remote
        result.cached, result.seconds = remote.cached, remote.seconds
        return result

    def _lost(self, genome: Genome, key: str, exc: BaseException) -> BuildResult:
        with self._lock:
            self.stats.lost += 1
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        return BuildResult(genome.id, key, ok=False, lost=True,
                           reason=f"build lost: the Ray worker building it failed {self.max_retries + 1} time(s) "
                                  f"({type(exc).__name__}: {first})")

    def _set_knobs(self, result: BuildResult, genome: Genome) -> None:
        if result.ok or result.build_key:
            try:
                result.knobs = self.compiler.render(genome).knobs
            except Exception:
                pass

    def to_dict(self) -> dict:
        """Throughput facts: builds per minute, queue depth, where builds ran."""
        s = self.stats
        return {"builds": s.finished, "build_seconds": round(s.build_seconds, 3),
                "builds_per_minute": round(s.builds_per_minute(), 2), "build_queue_depth": self.pending(),
                "builds_submitted": s.submitted, "builds_lost": s.lost, "builds_from_cache": s.served_from_cache,
                "build_workers": len(s.where), "builds_by_worker": dict(s.where)}

    def close(self) -> None:
        """Cancel the builds in flight (their futures resolve as lost builds)."""
        with self._lock:
            self._closed = True
            refs = list(self._refs.values())
            self._refs.clear()
        for ref in refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished, or Ray is shutting down
                pass
