"""The GPU worker process: verify and time kernels and vendor baselines on one GPU.

Started by evaluator.worker_pool.WorkerPool as `python -m evaluator.gpu_worker`; one request per line
of JSON on stdin, messages as JSON lines on the protocol stream (the original stdout; fd 1 is
redirected to stderr so that library output cannot corrupt the protocol).

Before anything that may fault or hang, the worker announces {"type": "running", "id": ...};
if it then dies or goes silent, the parent blames that kernel, records the failure and starts a
fresh worker. A kernel that writes outside C (canary bands) or leaves a sticky CUDA error ends
this process on purpose: its memory can no longer be trusted.

Measurement protocol (../shared/MEASURE.md): fresh standard-normal inputs per check, several
seeds, fp32 GPU reference, relative Frobenius error <= tolerance, NaN-poisoned output with canary
bands; device time by CUDA-graph replay of back-to-back launches rotating over input sets whose
total is >= 3x L2, >= 1 s warm-up, candidates and baselines interleaved round by round, median of
the repeats with min/max; server mode (idle gap, L2 flushed, one event-timed launch); call
latency (one synchronised call from Python). Streams, events and graphs are driven through
cuda-python; device memory comes from PyTorch's allocator (cudaMalloc underneath).

This module is the process and its protocol, and `Worker.measure`, which runs one request
through the steps that live in their own modules:
  timing_options     options, defaults, protocol minimums, check_timing
  timing_stats       rotation-set and launch counts, median / min / max
  worker_cuda        cuda-python streams, events, graphs; KernelFault
  worker_inputs      input sets, NaN poison and canary bands, fp32 reference
  worker_candidates  kernels (C ABI) and baselines behind one interface; releasing them
  worker_baselines   torch.matmul and cuBLASLt baselines, cuBLASLt autotuning
  worker_gate        the correctness gate and the re-check after timing
  timing_device      graph capture, warm-up, interleaved timed rounds
  timing_latency     server mode and call latency
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback

from .timing_device import measure_device_time, rotation_sets
from .timing_latency import call_latency, server_mode
# Names other code imports from evaluator.gpu_worker (check_timing: experiments/schema.py and
# experiments/bench.py) stay importable from here.
from .timing_options import PROTOCOL_MINIMUMS, TIMING_DEFAULTS, check_timing, timing_config
from .timing_stats import summary
from .worker_baselines import add_baselines, autotune, is_autotuned
from .worker_candidates import STATUS_TEXT, Candidate, EvoKernel, kernel_candidate, release_candidates
from .worker_cuda import Cuda, KernelFault
from .worker_gate import check_output, run_gate
from .worker_inputs import CANARY_ELEMS, CANARY_FP16, NAN_FP16, InputSet, Problem, make_set, poison, reference

__all__ = ["CANARY_ELEMS", "CANARY_FP16", "NAN_FP16", "PROTOCOL_MINIMUMS", "STATUS_TEXT", "TIMING_DEFAULTS",
           "Candidate", "Cuda", "EvoKernel", "InputSet", "KernelFault", "Problem", "Worker", "check_output",
           "check_timing", "main", "make_set", "poison", "reference", "serve", "summary"]


def copy_bandwidth_tbps(torch, nbytes: int = 1 << 30, repeats: int = 5) -> "float | None":
    """Device-to-device copy bandwidth (bytes read + written per second, TB/s): the best of a few
    copies of a buffer far larger than L2. The roofline of memory-bound shapes (MEASURE.md)."""
    try:
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        dst.copy_(src)
        best = float("inf")
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dst.copy_(src)
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end))
        del src, dst
        torch.cuda.empty_cache()
        return round(2 * nbytes / (best * 1e-3) / 1e12, 3)
    except Exception:  # no memory to spare: the bench then uses its documented default
        return None


class Worker:
    def __init__(self, proto) -> None:
        import torch
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cudnn.allow_tf32 = False
        self.proto = proto
        self.cuda = Cuda()
        props = torch.cuda.get_device_properties(0)
        self.device_name = props.name
        self.l2_bytes = int(getattr(props, "L2_cache_size", 50 << 20)) or (50 << 20)
        self.sm_count = props.multi_processor_count
        self.kernels: dict[str, EvoKernel] = {}
        self.flush_buf = torch.empty(max(2 * self.l2_bytes, 256 << 20), dtype=torch.uint8, device="cuda")
        self.hbm_tbps = copy_bandwidth_tbps(torch)
        self._lt = None  # cublaslt.LtHandle, made on first use, destroyed by close()

    # -- protocol ------------------------------------------------------------------------------
    def send(self, msg: dict) -> None:
        self.proto.write(json.dumps(msg) + "\n")
        self.proto.flush()

    def running(self, cid: str, phase: str) -> None:
        self.send({"type": "running", "id": cid, "phase": phase})

    # -- the device ----------------------------------------------------------------------------
    def info(self) -> dict:
        return {"device": self.device_name, "sm_count": self.sm_count, "l2_bytes": self.l2_bytes,
                "torch": self.torch.__version__, "cuda": self.torch.version.cuda, "hbm_tbps": self.hbm_tbps}

    def clocks(self) -> dict:
        """SM clock, power and temperature now (NVML), to show throttling beside the figures."""
        try:
            import pynvml
            pynvml.nvmlInit()
            index = int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or 0)
            h = pynvml.nvmlDeviceGetHandleByIndex(index)
            return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                    "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                    "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                    "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)}
        except Exception as exc:  # NVML missing or refused: say so, do not fail the measurement
            return {"error": f"{type(exc).__name__}: {exc}"}

    def lt_handle(self):
        """The worker's one cuBLASLt handle, shared by every problem's plans."""
        if self._lt is None:
            from .cublaslt import LtHandle
            self._lt = LtHandle()
        return self._lt

    def close(self) -> None:
        """Destroy the cuBLASLt handle (each request closes its own plans); a second call does nothing."""
        if self._lt is not None:
            lt, self._lt = self._lt, None
            lt.close()

    # -- the measurement ----------------------------------------------------------------------
    def measure(self, req: dict) -> dict:
        """One measure request: gate every candidate, time the survivors (device time, then the
        server and call modes asked for), release graphs and cuBLASLt plans, report."""
        t_start = time.monotonic()
        cfg = timing_config(req.get("config"))
        cfg["reference"] = req.get("reference")  # the candidate every other one alternates with
        modes = set(req.get("modes") or ["device"])
        p = Problem(*req["problem"])
        rng = random.Random(req.get("seed", 0))
        base_names = list(req.get("baselines") or [])
        need_wt = any(n.endswith("_nn") for n in base_names)
        cands: list[Candidate] = []
        try:
            for spec in req.get("kernels", []):
                cands.append(kernel_candidate(self, spec, p))
            add_baselines(self, base_names, p, cands)
            run_gate(self, cands, p, cfg, rng, need_wt)
            sets = rotation_sets(self, cands, p, cfg, rng, need_wt)
            if any(c.alive and is_autotuned(c) for c in cands):
                autotune(self, cands, sets, cfg)
            clocks = measure_device_time(self, cands, sets, cfg, rng)
            timed = [c for c in cands if c.alive and c.samples]
            self.latency_modes(modes, timed, sets, cfg, rng)
        finally:
            release_candidates(self.cuda, cands)  # graphs and cuBLASLt plans, on every path
        n_sets = len(sets)
        sets.clear()  # free the input sets before returning the cache to the driver
        self.torch.cuda.empty_cache()
        return self.result_message(req, cands, n_sets, time.monotonic() - t_start, clocks if timed else ({}, {}))

    def latency_modes(self, modes: set, timed: "list[Candidate]", sets: "list[InputSet]", cfg: dict,
                      rng: random.Random) -> None:
        if "server" in modes and timed:
            server_mode(self, timed, sets, cfg, rng)
        if "call" in modes and timed:
            call_latency(self, timed, sets, cfg, rng)

    def result_message(self, req: dict, cands: "list[Candidate]", n_sets: int, gpu_seconds: float,
                       clocks: "tuple[dict, dict]") -> dict:
        return {"type": "result", "problem": req["problem"], "n_sets": n_sets,
                "kernels": {c.id: c.result for c in cands if c.kind == "kernel"},
                "baselines": {c.id: c.result for c in cands if c.kind == "baseline"},
                "gpu_seconds": gpu_seconds, "info": self.info(),
                "clocks": {"before_timing": clocks[0], "after_timing": clocks[1]}}


def serve(worker, lines) -> int:
    """Answer requests, one JSON object per line, until 'exit', end of input or a fault.
    Returns the process exit code: 0, or 4 after a KernelFault (reported as a 'fault' message)."""
    for line in lines:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("op") == "measure":
                worker.send(worker.measure(req))
            elif req.get("op") == "ping":
                worker.send({"type": "pong"})
            elif req.get("op") == "exit":
                return 0
            else:
                worker.send({"type": "error", "error": f"unknown op {req.get('op')!r}"})
        except KernelFault as exc:
            worker.send({"type": "fault", "error": str(exc)})
            return 4
        except Exception as exc:
            worker.send({"type": "error", "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
    return 0


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the protocol
    try:
        worker = Worker(proto)
    except Exception as exc:
        proto.write(json.dumps({"type": "fatal", "error": f"worker start failed: {type(exc).__name__}: {exc}"}) + "\n")
        proto.flush()
        return 3
    try:
        worker.send({"type": "ready", "info": worker.info(), "pid": os.getpid()})
        return serve(worker, sys.stdin)
    finally:
        try:
            worker.close()
        except Exception as exc:  # the exit code and the last message matter more
            print(f"evogemm worker: closing failed: {type(exc).__name__}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
