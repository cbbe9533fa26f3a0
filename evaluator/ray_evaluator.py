"""`evaluator: {backend: ray, ...}`: builds as Ray tasks (evaluator/ray_builder.py), timing by the
simulator (CPU machines, tests) or by one GPU evaluator per GPU, each a Ray actor that wraps
`GpuEvaluator` unchanged (its isolated worker process, gate and timing protocol).

The engine sees an ordinary evaluator: the pipeline (evaluator/pipeline.py) takes the Ray builder
as its Builder, so builds stream to the runner as they finish and `prefetch` starts the next
round's builds early. `address` goes to `ray.init` (None: a local instance, or the cluster this
process already joined). Kernels reach a GPU actor through the object store (each actor writes the
cache entries it is sent into its own content-keyed cache), so the GPUs need no shared filesystem.

Each shape is timed on one GPU actor (its baselines and its kernels on the same GPU). The engine
searches up to `population.shapes_in_flight` shapes side by side, spread over the actors by lane
(`lanes`, `assign`: evolution/windows.py); shapes on one actor take turns on its GPU (an actor runs
one call at a time). Shapes the engine has not assigned go to the actors in the order first seen.
A GPU actor that dies costs only the call it held: Ray restarts it once and the call is made again
there (with the shape's paired reference set again); if it dies again, the next actor takes the
shape (`actor_failures` in stats counts the calls lost).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from genome import Genome, Problem
from templates import FamilyRegistry, family_registry

from .api import BaselineSet, Measurement
from .compile import BUILD_GB, BuildResult, Compiler
from .pipeline import BuildRunPipeline, space_check
from .cache_entry import entry_files, publish_files
from .ray_builder import RayBuilder, import_ray
from .simulator import SimulatedEvaluator

RUNNERS = ("auto", "simulator", "gpu")
ACTOR_ATTEMPTS = 3  # a call on a GPU actor: the actor, the actor restarted by Ray, then the next actor
RESTART_WAIT_S = 120.0  # how long a call waits for Ray to restart its actor
SIM_OPTIONS = ("calibration", "device", "noise", "seed")
GPU_OPTIONS = ("seed", "timing", "modes", "baselines", "silence_timeout_s", "paired", "log_dir")


class SimRunner:
    """The pipeline's Runner on the analytic simulator: no GPU, every figure simulated=True."""

    def __init__(self, sim: SimulatedEvaluator):
        self.sim = sim

    def run(self, problem: Problem, items: Sequence[tuple[Genome, BuildResult]]) -> "tuple[list[Measurement], float]":
        out = self.sim.evaluate([g for g, _ in items], problem)
        for m, (_, b) in zip(out, items):
            m.build_seconds, m.build_key = b.seconds, b.build_key
        return out, 0.0


class GpuHost:
    """The body of a GPU actor: one GpuEvaluator on the GPU Ray gave this actor, with its own
    kernel cache into which the driver's shipped entries are written."""

    def __init__(self, cache_dir: str, options: dict, families: "FamilyRegistry | None", evaluator_class: Any = None):
        if evaluator_class is None:
            from .gpu import GpuEvaluator as evaluator_class
        self.cache_dir = Path(cache_dir)
        self.ev = evaluator_class(cache_dir=cache_dir, gpu=0, families=families, **options)  # Ray sets CUDA_VISIBLE_DEVICES

    def _local(self, items: Sequence[tuple[Genome, BuildResult]], files: dict[str, dict[str, bytes]]
               ) -> list[tuple[Genome, BuildResult]]:
        out = []
        for g, b in items:
            if b.ok and b.build_key in files:
                publish_files(self.cache_dir, b.build_key, files[b.build_key])
            if b.ok and b.build_key:
                b.library = str(self.cache_dir / b.build_key[:2] / b.build_key / "kernel.so")
            out.append((g, b))
        return out

    def describe(self) -> str:
        return self.ev.describe()

    def device_facts(self) -> dict:
        return self.ev.device_facts()

    def baselines(self, problem: Problem) -> BaselineSet:
        return self.ev.baselines(problem)

    def set_reference(self, problem: Problem, baselines: "BaselineSet | None") -> "str | None":
        return self.ev.set_reference(problem, baselines)

    def run(self, problem: Problem, items: list, files: dict) -> "tuple[list[Measurement], float]":
        return self.ev.run(problem, self._local(items, files))

    def evaluate_built(self, genomes: list, problem: Problem, builds: list, files: dict, with_baselines: bool,
                       aa: bool) -> Any:
        local = self._local([(g, b) for g, b in zip(genomes, builds)], files)
        return self.ev.evaluate(genomes, problem, builds=[b for _, b in local], with_baselines=with_baselines, aa=aa)

    def focused_pair(self, problem: Problem, genome: Genome, build: BuildResult, files: dict, vendor: str) -> dict:
        (_, local), = self._local([(genome, build)], files)
        return self.ev.focused_pair(problem, genome, local, vendor)

    def stats(self, fresh: bool = False) -> dict:
        return self.ev.stats()

    def close(self) -> None:
        self.ev.close()


class RayEvaluator:
    """Evaluator protocol on Ray. Options: see OPTIONS. runner: auto (GPU actors when the cluster
    has GPUs, else the simulator) | simulator | gpu; gpus: at most this many GPU actors;
    cache_dir: the driver's kernel cache; worker_cache_dir / gpu_cache_dir: where build workers and
    GPU actors keep kernels on their nodes (default: the same path); build_memory_gb: the memory a
    build task asks for (a CUTLASS sm90 build peaks at ~3.4 GB); max_retries: Ray retries of a
    build whose worker died; ship_libraries: move kernels through the object store (False: the
    cache folder is shared). `compiler` and `gpu_class` are for tests (not campaign options)."""

    OPTIONS = ("address", "runner", "gpus", "actor_cpus", "cache_dir", "worker_cache_dir", "gpu_cache_dir", "build_memory_gb", "max_retries",
               "ship_libraries", "build_timeout_s", "calibration", "device", "noise", "seed", "timing", "modes",
               "baselines", "silence_timeout_s", "paired", "log_dir")

    def __init__(self, address: "str | None" = None, runner: str = "auto", gpus: "int | None" = None,
                 actor_cpus: float = 1.0,
                 cache_dir: "str | Path | None" = None, worker_cache_dir: "str | Path | None" = None,
                 gpu_cache_dir: "str | Path | None" = None,
                 build_memory_gb: float = BUILD_GB, max_retries: int = 2, ship_libraries: bool = True,
                 build_timeout_s: float = 600.0, families: "FamilyRegistry | None" = None,
                 compiler: "Compiler | None" = None, gpu_class: Any = None, **options: Any):
        if runner not in RUNNERS:
            raise ValueError(f"evaluator option runner must be one of {', '.join(RUNNERS)}, not {runner!r}")
        self.ray = import_ray()
        self._owns_ray = not self.ray.is_initialized()  # started (or joined) here: shut down on close
        if self._owns_ray:
            self.ray.init(address=address, include_dashboard=False)
        self.families = families or family_registry()
        self._check = space_check(self.families)  # genome, problem -> why it cannot run, or None
        self.compiler = compiler or Compiler.default(cache_dir, timeout_s=build_timeout_s, families=self.families)
        self.builder = RayBuilder(self.compiler, build_memory_gb=build_memory_gb, max_retries=max_retries,
                                  ship_libraries=ship_libraries, worker_cache_dir=worker_cache_dir)
        self.ship = bool(ship_libraries)
        cluster_gpus = int(self.ray.cluster_resources().get("GPU", 0))
        if runner == "gpu" and cluster_gpus == 0:
            raise RuntimeError("evaluator backend 'ray' with runner 'gpu': the Ray cluster has no GPU")
        n_gpus = min(cluster_gpus, gpus) if gpus is not None else cluster_gpus
        self.simulated = runner == "simulator" or (runner == "auto" and n_gpus == 0)
        self.sim: "SimulatedEvaluator | None" = None
        self.actors: list[Any] = []
        self._shipped: list[set[str]] = []
        self._actor_of: dict[str, int] = {}
        self._assign_lock = threading.Lock()
        self._reference_args: dict[str, "BaselineSet | None"] = {}  # shape -> what set_reference was given
        self._reference_on: dict[str, set[int]] = {}  # shape -> actors that hold its reference now
        self.actor_failures: list[dict] = []  # calls lost with a dying actor (each made again)
        self._dead: set[int] = set()  # actors that died after their restart
        self._stats_refs: dict[int, Any] = {}  # actor -> its stats call in flight
        self._actor_figures: dict[int, dict] = {}  # actor -> the last stats it reported
        if self.simulated:
            self.sim = SimulatedEvaluator(families=self.families, **{k: v for k, v in options.items()
                                                                     if k in SIM_OPTIONS})
            runner_obj: Any = SimRunner(self.sim)
        else:
            cpus = float(self.ray.cluster_resources().get("CPU", 0))
            if cpus - max(1, n_gpus) * actor_cpus < 1:
                raise RuntimeError(f"evaluator backend 'ray': {max(1, n_gpus)} GPU actor(s) holding {actor_cpus:g} CPU "
                                   f"each leave none of the cluster's {cpus:g} CPUs to build on; set the option "
                                   "actor_cpus lower (0 is fine: an actor mostly waits on its GPU)")
            gpu_opts = {k: v for k, v in options.items() if k in GPU_OPTIONS}
            actor_cls = self.ray.remote(num_gpus=1, num_cpus=actor_cpus, max_restarts=1)(GpuHost)
            actor_cache = str(Path(gpu_cache_dir).absolute()) if gpu_cache_dir else str(self.compiler.cache_dir)
            self.actors = [actor_cls.remote(actor_cache, gpu_opts, self.families, gpu_class)
                           for _ in range(max(1, n_gpus))]
            self._shipped = [set() for _ in self.actors]
            self._submit_locks = [threading.Lock() for _ in self.actors]
            runner_obj = self
        self.pipeline = BuildRunPipeline(self.builder, runner_obj, self._check)
        self._started = time.monotonic()

    # -- shapes to GPU actors -----------------------------------------------------------------------
    #: Shapes the engine may search side by side. A GPU actor runs one call at a time (Ray actors
    #: are sequential), so shapes that share an actor take turns on its GPU, each timing batch alone
    #: with its own paired reference; more shapes than GPUs keep more builds in flight.
    lanes = 64

    def assign(self, problem: Problem, lane: int) -> None:
        """The engine runs `problem` on lane `lane`: its baselines and kernels go to that GPU actor
        (the next live one, when that actor died for good)."""
        if self.actors:
            with self._assign_lock:
                self._actor_of[problem.name] = self._alive(lane % len(self.actors))

    def _alive(self, index: int) -> int:
        """`index`, or the next actor that has not died for good (caller holds _assign_lock)."""
        for step in range(len(self.actors)):
            candidate = (index + step) % len(self.actors)
            if candidate not in self._dead:
                return candidate
        return index  # every actor died: the call fails and says so

    def _actor(self, problem: Problem) -> int:
        with self._assign_lock:
            if problem.name not in self._actor_of:
                self._actor_of[problem.name] = self._alive(len(self._actor_of) % len(self.actors))
            return self._actor_of[problem.name]

    def _files(self, index: int, builds: Sequence[BuildResult]) -> dict[str, dict[str, bytes]]:
        """The cache entries actor `index` has not been sent yet (through the object store)."""
        if not self.ship:
            return {}
        out = {}
        with self._assign_lock:
            todo = [b for b in builds if b.ok and b.build_key and b.build_key not in self._shipped[index]]
            self._shipped[index].update(b.build_key for b in todo)
        for b in todo:
            entry = self.compiler.entry_dir(b.build_key)
            out[b.build_key] = entry_files(entry)
        return out

    def _call(self, problem: Problem, method: str, *args: Any) -> Any:
        return self._on_actor(problem, method, [], lambda files: args)

    def _on_actor(self, problem: Problem, method: str, builds: Sequence[BuildResult],
                  make_args: Callable[[dict], Sequence[Any]]) -> Any:
        """Call `method` on the shape's GPU actor, with `make_args(files)` (the cache entries of
        `builds` that actor has not been sent). An actor that dies costs only the call it held: the
        call is made again on the restarted actor (Ray restarts it once), then on the next actor,
        with the shape's paired reference set there first."""
        error: "BaseException | None" = None
        lost = 0
        waiting_since: "float | None" = None
        unavailable = getattr(self.ray.exceptions, "ActorUnavailableError", ())  # Ray >= 2.11
        while True:
            index = self._actor(problem)
            try:
                # one submission at a time per actor: the files a call needs are sent with it or with a
                # call submitted (and so run: an actor runs its caller's calls in order) before it
                with self._submit_locks[index]:
                    self._ensure_reference(problem, index, method)
                    files = self._files(index, builds)
                    ref = getattr(self.actors[index], method).remote(*make_args(files))
                return self.ray.get(ref)
            except self.ray.exceptions.RayActorError as exc:
                error = exc
                restarting = isinstance(exc, unavailable)
                if restarting and waiting_since is not None and time.monotonic() - waiting_since < RESTART_WAIT_S:
                    with self._assign_lock:
                        self._shipped[index].clear()  # what this attempt sent may never have arrived
                    time.sleep(0.5)  # Ray is restarting the actor: ask it again
                    continue
                self._actor_lost(problem, index, lost, exc)
                lost += 1
                if lost >= ACTOR_ATTEMPTS:
                    break
                waiting_since = time.monotonic()
        first = str(error).strip().splitlines()[0][:300] if error is not None and str(error).strip() else ""
        raise RuntimeError(f"{problem.name}: {method} lost {lost} times with a dying GPU actor; the last: "
                           f"{type(error).__name__}: {first}")

    def _ensure_reference(self, problem: Problem, index: int, method: str) -> None:
        """A restarted or new actor does not know the shape's paired reference: set it again."""
        if method == "set_reference" or problem.name not in self._reference_args:
            return
        with self._assign_lock:
            known = index in self._reference_on.setdefault(problem.name, set())
        if not known:
            self.ray.get(self.actors[index].set_reference.remote(problem, self._reference_args[problem.name]))
            with self._assign_lock:
                self._reference_on[problem.name].add(index)

    def _actor_lost(self, problem: Problem, index: int, attempt: int, exc: BaseException) -> None:
        with self._assign_lock:
            self.actor_failures.append({"shape": problem.name, "actor": index, "attempt": attempt,
                                        "error": f"{type(exc).__name__}: {str(exc).strip()[:200]}"})
            self._shipped[index].clear()  # a restarted actor may have lost what it was sent
            for known in self._reference_on.values():
                known.discard(index)
            if attempt >= 1 and len(self.actors) > 1:  # restarted and failed again: it is gone for good
                self._dead.add(index)
                self._actor_of.update({name: self._alive(i) for name, i in self._actor_of.items() if i == index})

    # -- the Evaluator protocol ---------------------------------------------------------------------
    def describe(self) -> str:
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        if self.sim is not None:
            return f"Ray ({cpus} CPUs build); timing {self.sim.describe()}"
        return f"Ray ({cpus} CPUs build, {len(self.actors)} GPU actor(s)); " + self.ray.get(self.actors[0].describe.remote())

    def baselines(self, problem: Problem) -> BaselineSet:
        if self.sim is not None:
            return self.sim.baselines(problem)
        return self._call(problem, "baselines", problem)

    def set_reference(self, problem: Problem, baselines: "BaselineSet | None") -> "str | None":
        if self.sim is not None:
            return None
        name = self._call(problem, "set_reference", problem, baselines)
        with self._assign_lock:
            self._reference_args[problem.name] = baselines
            self._reference_on[problem.name] = {self._actor_of[problem.name]}
        return name

    def device_facts(self) -> dict:
        return self.sim.device_facts() if self.sim is not None else self.ray.get(self.actors[0].device_facts.remote())

    def prefetch(self, genomes: Sequence[Genome], problem: "Problem | None" = None) -> int:
        return self.pipeline.prefetch(genomes, problem)

    def unbuilt(self, genomes: Sequence[Genome], problem: "Problem | None" = None) -> int:
        """How many of `genomes` have no build in the kernel cache yet (their round waits on nvcc)."""
        return sum(not self.compiler.cached(g) for g in genomes)

    def build_seconds_prior(self) -> "float | None":
        """What a build takes before this session timed a round that built (`Compiler.build_seconds_prior`)."""
        return self.compiler.build_seconds_prior()

    def build(self, genomes: Sequence[Genome], progress: Any = None) -> list[BuildResult]:
        """The builds of `genomes`, in order; a build lost with its worker is asked for once more (as the
        pipeline does: BuildResult.lost)."""
        futures = [self.builder.submit(g) for g in genomes]
        results = []
        for i, (g, f) in enumerate(zip(genomes, futures), start=1):
            result = f.result()
            if result.lost:
                result = self.builder.submit(g).result()
            results.append(result)
            if progress:
                progress(i, len(futures), results[-1])
        return results

    def run(self, problem: Problem, items: Sequence[tuple[Genome, BuildResult]]) -> "tuple[list[Measurement], float]":
        """The Runner with GPU actors: the shape's actor gates and times the built kernels."""
        return self._on_actor(problem, "run", [b for _, b in items], lambda files: (problem, list(items), files))

    def evaluate(self, genomes: Sequence[Genome], problem: Problem, builds: "Sequence[BuildResult] | None" = None,
                 with_baselines: bool = False, aa: bool = False) -> Any:
        if self.sim is not None or (builds is None and not with_baselines):
            if with_baselines:
                return self.pipeline.evaluate(genomes, problem), self.baselines(problem)
            return self.pipeline.evaluate(genomes, problem)
        by_id = {b.genome_id: b for b in (builds if builds is not None else self.build(genomes))}
        ready = [(g, by_id[g.id]) for g in genomes if g.id in by_id]
        return self._on_actor(problem, "evaluate_built", [b for _, b in ready], lambda files: (
            [g for g, _ in ready], problem, [b for _, b in ready], files, with_baselines, aa))

    def focused_pair(self, problem: Problem, genome: Genome, build: BuildResult, vendor: str) -> dict:
        return self._on_actor(problem, "focused_pair", [build], lambda files: (problem, genome, build, files, vendor))

    def stats(self, fresh: bool = False) -> dict:
        """Throughput: builds per minute, build queue depth, where builds ran; with GPU actors the GPU
        busy seconds and the busy fraction over all GPUs since start. The actors' own figures are
        the last they reported (`fresh`: wait for each actor's current figure, behind its queue). `gpu_busy_seconds` is the
        driver pipeline's runner time, as for the single-process backend (so the two compare, and
        `gpu_seconds_during_builds` is a part of it); each actor's own figure is beside it."""
        out = {**self.pipeline.stats.to_dict(), **self.builder.to_dict()}
        if self.actors:
            per = [self._actor_stats(a) for a in self.actors] if fresh else self._last_actor_stats()
            wall = max(1e-9, time.monotonic() - self._started)
            busy = float(out.get("gpu_busy_seconds", 0.0))
            out.update(gpu_actors=len(self.actors), actor_failures=len(self.actor_failures),
                       gpu_busy_fraction=round(min(1.0, busy / (wall * len(self.actors))), 4),
                       actor_busy_seconds=sum(float(s.get("gpu_busy_seconds", 0.0)) for s in per),
                       gpu_busy_by_actor=[round(float(s.get("gpu_busy_seconds", 0.0)), 3) for s in per])
        return out

    def _last_actor_stats(self) -> list[dict]:
        """Each actor's last reported figures, without waiting: a stats call queues behind the
        actor's timing calls, so it is asked in the background and read once it has answered."""
        with self._assign_lock:
            for i, actor in enumerate(self.actors):
                ref = self._stats_refs.get(i)
                if ref is not None and self.ray.wait([ref], timeout=0)[0]:
                    try:
                        self._actor_figures[i] = self.ray.get(ref)
                    except self.ray.exceptions.RayActorError:
                        pass
                    self._stats_refs.pop(i)
                if i not in self._stats_refs and i not in self._dead:
                    self._stats_refs[i] = actor.stats.remote()
            return [self._actor_figures.get(i, {}) for i in range(len(self.actors))]

    def _actor_stats(self, actor: Any) -> dict:
        try:
            return self.ray.get(actor.stats.remote())
        except self.ray.exceptions.RayActorError:  # dead for good: its figures went with it
            return {}

    def close(self) -> None:
        self.builder.close()
        for actor in self.actors:
            try:
                self.ray.get(actor.close.remote())
            except Exception:  # noqa: BLE001 - a dead actor has nothing left to close
                pass
        self.actors = []
        if self._owns_ray and self.ray.is_initialized():
            self.ray.shutdown()
            self._owns_ray = False
