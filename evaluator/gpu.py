"""The GPU evaluator: compile (cache, pool) -> verify -> time in isolated worker processes.

Builder and Runner are separate (evaluator/pipeline.py): nvcc builds run in the compiler's pool,
started early by `prefetch`, while the worker gates and times the kernels already built.

One worker process per GPU (evaluator/gpu_worker.py). A kernel that faults, corrupts memory or
hangs costs only its worker: the parent blames the kernel the worker last announced, records the
failure with its reason, starts a fresh worker and measures the rest of the batch again there.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from genome import Genome, Problem
from templates import FamilyRegistry, family_registry

from .api import STATUS_CRASHED, STATUS_INVALID, STATUS_OK, STATUS_TIMEOUT, BaselineSet, Measurement, Timing
from .compile import BuildResult, Compiler
from .pipeline import BuildRunPipeline, build_failure
from .timing_options import check_timing

# MEASURE.md's best vendor: torch.matmul, cuBLASLt heuristic top-1 and cuBLASLt autotuned, each in
# the TN (W as given) and NN (W^T stored) formulations, all with fp32 compute.
BASELINES = ("torch_tn", "torch_nn", "cublaslt_heuristic", "cublaslt_heuristic_nn", "cublaslt_autotuned",
             "cublaslt_autotuned_nn")
REPO_ROOT = Path(__file__).resolve().parent.parent


class WorkerStartError(RuntimeError):
    """The GPU worker process could not start (no torch, no usable GPU, a broken driver)."""


class WorkerDied(Exception):
    def __init__(self, blamed: "str | None", phase: "str | None", status: str, reason: str):
        super().__init__(reason)
        self.blamed, self.phase, self.status, self.reason = blamed, phase, status, reason


@dataclass
class Worker:
    """One worker process on one GPU, speaking JSON lines."""

    gpu: int = 0
    start_timeout_s: float = 120.0
    proc: "subprocess.Popen | None" = None
    info: dict = field(default_factory=dict)
    _lines: "queue.Queue[str | None]" = field(default_factory=queue.Queue)
    log_path: "Path | None" = None
    module: str = "evaluator.gpu_worker"  # the worker program (tests substitute a fake one)

    def start(self) -> None:
        env = dict(os.environ)
        env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        stderr = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", self.module], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=stderr, text=True, env=env,
                                         start_new_session=True)
        finally:
            if stderr is not subprocess.DEVNULL:
                stderr.close()  # the child holds its own copy
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc, self._lines), daemon=True).start()
        try:
            msg = self.read(self.start_timeout_s)
        except TimeoutError:
            msg = {"error": f"no answer in {self.start_timeout_s:.0f} s"}
        if msg is None or msg.get("type") != "ready":
            self.kill()
            why = (msg or {}).get("error") or "it exited at once"
            log = f"; its log: {self.log_path}" if self.log_path else ""
            raise WorkerStartError(f"the GPU worker did not start: {why}{log}")
        self.info = msg.get("info", {})

    @staticmethod
    def _pump(proc: subprocess.Popen, lines: "queue.Queue[str | None]") -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def read(self, timeout: float) -> "dict | None":
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError
        if line is None:
            return None
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return {"type": "noise", "text": line}

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                self.proc.kill()
            self.proc.wait(timeout=30)

    def request(self, req: dict, silence_timeout_s: float) -> dict:
        """Send one request; return its result. Raises WorkerDied naming the kernel to blame."""
        if not self.alive():
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        blamed, phase = None, None
        while True:
            try:
                msg = self.read(silence_timeout_s)
            except TimeoutError:
                self.kill()
                raise WorkerDied(blamed, phase, STATUS_TIMEOUT,
                                 f"hung: no progress for {silence_timeout_s:.0f} s during {phase or 'setup'}")
            if msg is None:
                code = self.proc.wait(timeout=30)
                raise WorkerDied(blamed, phase, STATUS_CRASHED,
                                 f"worker process died (exit code {code}) during {phase or 'setup'}")
            kind = msg.get("type")
            if kind == "running":
                blamed, phase = msg.get("id"), msg.get("phase")
            elif kind == "result":
                return msg
            elif kind == "fault":
                self.proc.wait(timeout=30)
                raise WorkerDied(blamed, phase, STATUS_CRASHED, f"{msg.get('error')} (during {phase})")
            elif kind == "error":
                raise RuntimeError(f"GPU worker error: {msg.get('error')}\n{msg.get('trace', '')}")
            elif kind == "fatal":
                raise RuntimeError(f"GPU worker failed: {msg.get('error')}")

    def close(self) -> None:
        if self.alive():
            try:
                assert self.proc is not None and self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "exit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, BrokenPipeError):
                self.kill()


@dataclass
class MeasureResult:
    kernels: dict[str, dict]
    baselines: dict[str, dict]
    failures: dict[str, tuple[str, str]]   # id -> (status, reason): crashed / timed out
    info: dict
    gpu_seconds: float
    restarts: int
    clocks: dict = field(default_factory=dict)


class WorkerPool:
    """Runs measure requests on a worker, surviving kernels that kill it."""

    def __init__(self, gpu: int = 0, silence_timeout_s: float = 60.0, log_dir: "Path | None" = None,
                 worker_module: str = "evaluator.gpu_worker"):
        self.silence_timeout_s = silence_timeout_s
        log = None
        if log_dir:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            log = Path(log_dir) / f"gpu{gpu}-worker.log"
        self.worker = Worker(gpu=gpu, log_path=log, module=worker_module)
        self.restarts = 0

    def measure(self, problem: Problem, kernels: list[dict], baselines: Sequence[str], modes: Sequence[str],
                config: dict, seed: int) -> MeasureResult:
        failures: dict[str, tuple[str, str]] = {}
        pending = list(kernels)
        base = list(baselines)
        t0 = time.monotonic()
        restarts = 0
        while True:
            req = {"op": "measure", "problem": [problem.m, problem.n, problem.k], "kernels": pending,
                   "baselines": base, "modes": list(modes), "config": config, "seed": seed}
            try:
                result = self.worker.request(req, self.silence_timeout_s)
                return MeasureResult(result["kernels"], result["baselines"], failures, result.get("info", {}),
                                     time.monotonic() - t0, restarts, result.get("clocks", {}))
            except WorkerDied as died:
                restarts += 1
                self.restarts += 1
                blamed = died.blamed
                if blamed is None or restarts > len(kernels) + len(base) + 2:
                    raise RuntimeError(f"GPU worker keeps dying without a kernel to blame: {died.reason}")
                failures[blamed] = (died.status, died.reason)
                pending = [k for k in pending if k["id"] != blamed]
                base = [b for b in base if b != blamed]
                self.worker.kill()

    def info(self) -> dict:
        if not self.worker.alive():
            self.worker.start()
        return self.worker.info

    def close(self) -> None:
        self.worker.close()


def _timing(d: "dict | None") -> "Timing | None":
    return Timing(**d) if d else None


class GpuEvaluator:
    """Evaluator protocol on a real GPU. Options: see OPTIONS."""

    OPTIONS = ("cache_dir", "jobs", "gpu", "seed", "timing", "modes", "baselines", "log_dir", "silence_timeout_s",
               "build_timeout_s", "overlap")
    simulated = False

    def __init__(self, cache_dir: "str | Path | None" = None, jobs: "int | None" = None, gpu: int = 0, seed: int = 0,
                 timing: "dict | None" = None, modes: Sequence[str] = ("device",),
                 baselines: Sequence[str] = BASELINES, log_dir: "str | Path | None" = None,
                 silence_timeout_s: float = 60.0, build_timeout_s: float = 600.0,
                 families: "FamilyRegistry | None" = None, overlap: bool = True):
        self.families = families or family_registry()
        self.compiler = Compiler.default(cache_dir, jobs=jobs, timeout_s=build_timeout_s, families=self.families)
        self.pool = WorkerPool(gpu=gpu, silence_timeout_s=silence_timeout_s,
                               log_dir=Path(log_dir) if log_dir else None)
        self.seed = seed
        check_timing(dict(timing or {}))  # unknown options and a loosened gate are refused here too
        self.timing = dict(timing or {})
        self.modes = tuple(modes)
        self.baseline_names = tuple(baselines)
        self._baselines: dict[str, BaselineSet] = {}
        self.pipeline = BuildRunPipeline(self.compiler, self, self._check)
        self.overlap = bool(overlap)  # False: build a whole batch, then time it (no prefetch; for comparison)

    def describe(self) -> str:
        info = self.pool.info()
        return f"{info.get('device', 'GPU')} ({info.get('sm_count')} SMs, torch {info.get('torch')}, CUDA {info.get('cuda')})"

    def _seed_for(self, problem: Problem, ids: Sequence[str]) -> int:
        """Inputs of a measurement depend on (campaign seed, problem, and `ids`), not on call
        history. Kernels pass no ids: every batch of a problem gets the same gate inputs and timing
        sets, whichever kernels finished building together, so a resumed campaign (or a run with
        other build times) checks and times a kernel on the same inputs."""
        import hashlib
        blob = json.dumps([self.seed, problem.name, sorted(ids)]).encode()
        return int.from_bytes(hashlib.sha256(blob).digest()[:4], "little") >> 1

    def _check(self, genome: Genome, problem: Problem) -> "str | None":
        try:
            violations = self.families.resolve(genome.family).space.violations(genome, problem)
        except ValueError as exc:
            return str(exc)
        return "; ".join(map(str, violations)) or None

    def build(self, genomes: Sequence[Genome], progress=None) -> list[BuildResult]:
        return self.compiler.build_many(genomes, progress=progress)

    def prefetch(self, genomes: Sequence[Genome], problem: "Problem | None" = None) -> int:
        """Start building genomes now (the engine calls this while the GPU times another round)."""
        return self.pipeline.prefetch(genomes, problem) if self.overlap else 0

    def device_facts(self) -> dict:
        """Facts of the GPU the bench's roofline needs: measured copy bandwidth (TB/s)."""
        return {"hbm_tbps": self.pool.info().get("hbm_tbps"), "hbm_source": "copy bandwidth measured on this GPU"}

    def stats(self) -> dict:
        """GPU busy seconds (gate + timing in the worker), builds run and their nvcc seconds."""
        return {**self.pipeline.stats.to_dict(), "builds": self.compiler.nvcc_runs,
                "build_seconds": self.compiler.nvcc_seconds}

    def baselines(self, problem: Problem) -> BaselineSet:
        if problem.name not in self._baselines:
            result = self.pool.measure(problem, [], self.baseline_names, self.modes, self.timing,
                                       self._seed_for(problem, self.baseline_names))
            self.pipeline.stats.gpu_busy_seconds += result.gpu_seconds
            self._baselines[problem.name] = baseline_set(problem, result)
        return self._baselines[problem.name]

    def run(self, problem: Problem, items: Sequence[tuple[Genome, BuildResult]],
            with_baselines: bool = False) -> "tuple[list[Measurement], float]":
        """The Runner: gate and time built kernels in the worker (with the baselines interleaved
        when asked); one measurement per item and the GPU seconds it took."""
        measurements, _, seconds = self._measure(problem, items, with_baselines=with_baselines)
        return measurements, seconds

    def _measure(self, problem: Problem, items: Sequence[tuple[Genome, BuildResult]], with_baselines: bool
                 ) -> "tuple[list[Measurement], MeasureResult | None, float]":
        specs = [{"id": g.id, "lib": b.library, "knobs": list(b.knobs)} for g, b in items]
        base_names = self.baseline_names if with_baselines else ()
        seed = self._seed_for(problem, list(base_names))
        result = self.pool.measure(problem, specs, base_names, self.modes, self.timing, seed) \
            if specs or base_names else None
        n = max(1, len(specs))
        out = []
        for g, b in items:
            gid = g.id
            if result and gid in result.failures:
                status, reason = result.failures[gid]
                out.append(Measurement(gid, problem.name, status, reason=reason, build_seconds=b.seconds,
                                       build_key=b.build_key))
                continue
            r = result.kernels.get(gid, {}) if result else {}
            out.append(Measurement(
                gid, problem.name, r.get("status", STATUS_CRASHED), device=_timing(r.get("device")),
                server=_timing(r.get("server")), call=_timing(r.get("call")), rel_error=r.get("rel_error"),
                acc_error=r.get("acc_error"),
                reason=r.get("reason"), build_seconds=b.seconds,
                gpu_seconds=(result.gpu_seconds / n) if result else 0.0, build_key=b.build_key))
        return out, result, (result.gpu_seconds if result else 0.0)

    def evaluate(self, genomes: Sequence[Genome], problem: Problem, builds: "Sequence[BuildResult] | None" = None,
                 with_baselines: bool = False) -> "list[Measurement] | tuple[list[Measurement], BaselineSet]":
        """Measure `genomes` on `problem`. During a search, builds stream into the worker as they
        finish (the pipeline); with `with_baselines` (re-verification, bench) every kernel and
        baseline is measured in one interleaved run once all are built."""
        if builds is None and not with_baselines and self.overlap:
            return self.pipeline.evaluate(genomes, problem)
        out: dict[str, Measurement] = {}
        to_build = []
        for g in genomes:
            why = self._check(g, problem)
            if why:
                out[g.id] = Measurement(g.id, problem.name, STATUS_INVALID, reason=why)
            else:
                to_build.append(g)
        by_id = {b.genome_id: b for b in (builds if builds is not None else self.compiler.build_many(to_build))}
        ready = []
        for g in to_build:
            b = by_id[g.id]
            if b.ok:
                ready.append((g, b))
            else:
                out[g.id] = build_failure(g, problem, b)
        measurements, result, seconds = self._measure(problem, ready, with_baselines)
        self.pipeline.stats.gpu_busy_seconds += seconds
        for (g, _), m in zip(ready, measurements):
            out[g.id] = m
        ordered = [out[g.id] for g in genomes]
        if with_baselines:
            bs = baseline_set(problem, result) if result else BaselineSet(problem.name)
            self._baselines.setdefault(problem.name, bs)
            return ordered, bs
        return ordered

    def close(self) -> None:
        self.compiler.close()
        self.pool.close()


def baseline_set(problem: Problem, result: MeasureResult) -> BaselineSet:
    bs = BaselineSet(problem=problem.name)
    for name, r in result.baselines.items():
        if r.get("status", STATUS_OK) != STATUS_OK or not r.get("device"):
            bs.notes[name] = f"{r.get('status', 'failed')}: {r.get('reason', '')}"
            continue
        for mode in ("device", "server", "call"):
            if r.get(mode):
                getattr(bs, mode)[name] = Timing(**r[mode])
        if r.get("rel_error") is not None:
            bs.rel_error[name] = r["rel_error"]
        if "algorithms" in r:
            bs.notes[name] = f"{r.get('algorithms')} heuristic algorithms" + (
                f", {r.get('algorithms_timed')} timed, best index {r.get('algorithm_index')}"
                if "algorithm_index" in r else "")
    for name, (status, reason) in result.failures.items():
        if name in BASELINES:
            bs.notes[name] = f"{status}: {reason}"
    if result.clocks:
        bs.notes["clocks"] = json.dumps(result.clocks, sort_keys=True)
    return bs
