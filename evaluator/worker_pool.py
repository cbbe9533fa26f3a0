"""The GPU worker processes seen from the parent: start one, send it requests, read its answers,
and survive the kernels that kill it (the worker itself is evaluator/gpu_worker.py).

One worker process per GPU. A kernel that faults, corrupts memory or hangs costs only its worker:
the parent blames the kernel the worker last announced, records the failure with its reason,
starts a fresh worker and measures the rest of the batch again there. The worker runs one request
at a time: shapes searched side by side on one GPU (`population.shapes_in_flight`) take turns on it,
so a timing never shares the GPU with another one.
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

from genome import Problem

from .api import STATUS_CRASHED, STATUS_TIMEOUT

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
        self._turn = threading.RLock()   # one request on the worker (and its GPU) at a time

    def measure(self, problem: Problem, kernels: list[dict], baselines: Sequence[str], modes: Sequence[str],
                config: dict, seed: int, reference: "str | None" = None) -> MeasureResult:
        """Gate and time `kernels` and `baselines`; with `reference` (the id of one of them) every
        other candidate is timed right after a replay of the reference, round by round. Callers on
        other threads wait their turn."""
        with self._turn:
            return self._measure(problem, kernels, baselines, modes, config, seed, reference)

    def _measure(self, problem: Problem, kernels: list[dict], baselines: Sequence[str], modes: Sequence[str],
                 config: dict, seed: int, reference: "str | None") -> MeasureResult:
        failures: dict[str, tuple[str, str]] = {}
        pending = list(kernels)
        base = list(baselines)
        t0 = time.monotonic()
        restarts = 0
        while True:
            req = {"op": "measure", "problem": [problem.m, problem.n, problem.k], "kernels": pending,
                   "baselines": base, "modes": list(modes), "config": config, "seed": seed,
                   "reference": reference}
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
        with self._turn:
            if not self.worker.alive():
                self.worker.start()
            return self.worker.info

    def close(self) -> None:
        with self._turn:
            self.worker.close()
