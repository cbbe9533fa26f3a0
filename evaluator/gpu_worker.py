"""The GPU worker process: verify and time kernels and vendor baselines on one GPU.

Started by evaluator.gpu.WorkerPool as `python -m evaluator.gpu_worker`; one request per line
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
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable

# Measurement settings (MEASURE.md): correctness seeds and tolerance, timing repeats and warm-up,
# graph size, input rotation, server-mode and call-latency samples, cuBLASLt autotuning.
TIMING_DEFAULTS = MappingProxyType({
    "seeds": 3, "tolerance": 1e-3, "repeats": 10, "warmup_s": 1.0, "target_replay_ms": 2.0,
    "max_launches": 2000, "l2_multiple": 3.0, "server_samples": 10, "server_gap_ms": 10.0,
    "call_samples": 30, "autotune_algos": 100, "autotune_iters": 5})
# Below these a figure does not meet MEASURE.md's protocol (tests may go lower; reports say so).
PROTOCOL_MINIMUMS = MappingProxyType({"seeds": 2, "repeats": 5, "warmup_s": 1.0, "l2_multiple": 3.0})


def check_timing(options: "dict | None") -> list[str]:
    """Raise ValueError for unknown keys or bad values; return the protocol minimums not met."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(TIMING_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown timing option(s) {', '.join(unknown)}; allowed: {', '.join(TIMING_DEFAULTS)}")
    for key, value in options.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"timing option {key} must be a non-negative number, got {value!r}")
    return [f"{k}={options[k]} < {v}" for k, v in PROTOCOL_MINIMUMS.items() if k in options and options[k] < v]


NAN_FP16 = 0x7E00
CANARY_FP16 = 0x7C01  # a signalling-NaN bit pattern no kernel produces by arithmetic
CANARY_ELEMS = 8192   # 16 KB before and after C


class KernelFault(Exception):
    """A sticky CUDA error or memory corruption: this process must end after reporting it."""


# ------------------------------------------------------------------------------------------------
# CUDA runtime helpers (cuda-python)
# ------------------------------------------------------------------------------------------------

def _rt():
    from cuda.bindings import runtime
    return runtime


def _ok(result, what: str):
    """Unpack a cuda-python return tuple, raising on error."""
    rt = _rt()
    err = result[0] if isinstance(result, tuple) else result
    if err != rt.cudaError_t.cudaSuccess:
        name = getattr(err, "name", str(err))
        raise KernelFault(f"{what}: {name}") if _sticky(err) else RuntimeError(f"{what}: {name}")
    if isinstance(result, tuple):
        return result[1] if len(result) == 2 else result[1:]
    return None


def _sticky(err) -> bool:
    name = getattr(err, "name", "")
    return any(s in name for s in ("IllegalAddress", "LaunchFailure", "MisalignedAddress", "IllegalInstruction",
                                   "HardwareStackError", "InvalidPc", "Assert", "ECCUncorrectable",
                                   "LaunchTimeout", "Unknown"))


class Cuda:
    """Streams, events and graphs through cuda-python's runtime bindings."""

    def __init__(self) -> None:
        rt = _rt()
        self.rt = rt
        self.stream = _ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking), "cudaStreamCreate")
        self.start = _ok(rt.cudaEventCreate(), "cudaEventCreate")
        self.end = _ok(rt.cudaEventCreate(), "cudaEventCreate")
        self.gate_stream = _ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking), "cudaStreamCreate")

    @property
    def stream_ptr(self) -> int:
        return int(self.stream)

    def sync(self, what: str = "cudaStreamSynchronize") -> None:
        _ok(self.rt.cudaStreamSynchronize(self.stream), what)
        _ok(self.rt.cudaGetLastError(), what + " (last error)")

    def capture(self, enqueue: Callable[[], None]):
        """Capture everything `enqueue` puts on the stream into an instantiated graph."""
        rt = self.rt
        _ok(rt.cudaStreamBeginCapture(self.stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed),
            "cudaStreamBeginCapture")
        try:
            enqueue()
        finally:
            graph = _ok(rt.cudaStreamEndCapture(self.stream), "cudaStreamEndCapture")
        exe = _ok(rt.cudaGraphInstantiate(graph, 0), "cudaGraphInstantiate")
        return graph, exe

    def replay_ms(self, exe) -> float:
        rt = self.rt
        _ok(rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
        _ok(rt.cudaGraphLaunch(exe, self.stream), "cudaGraphLaunch")
        _ok(rt.cudaEventRecord(self.end, self.stream), "cudaEventRecord")
        _ok(rt.cudaEventSynchronize(self.end), "cudaEventSynchronize")
        _ok(rt.cudaGetLastError(), "graph replay")
        return float(_ok(rt.cudaEventElapsedTime(self.start, self.end), "cudaEventElapsedTime"))

    def timed_once_ms(self, enqueue: Callable[[], None]) -> float:
        rt = self.rt
        _ok(rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
        enqueue()
        _ok(rt.cudaEventRecord(self.end, self.stream), "cudaEventRecord")
        _ok(rt.cudaEventSynchronize(self.end), "cudaEventSynchronize")
        _ok(rt.cudaGetLastError(), "launch")
        return float(_ok(rt.cudaEventElapsedTime(self.start, self.end), "cudaEventElapsedTime"))

    def gated_once_ms(self, enqueue: Callable[[], None], flag_ptr: int) -> "tuple[float, bool]":
        """Device time of one launch with host launch cost kept out: the stream first waits on a
        device flag, the events and the launch queue up behind it, then a second stream releases
        the flag. Returns (ms, gated); gated is False where stream memory operations are missing
        and the plain event timing (which includes the launch cost) was used."""
        if self.gate_stream is None:
            return self.timed_once_ms(enqueue), False
        from cuda.bindings import driver
        rt = self.rt
        stream = driver.CUstream(int(self.stream))
        err, = driver.cuStreamWaitValue32(stream, driver.CUdeviceptr(flag_ptr), 1,
                                         driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
        if err != driver.CUresult.CUDA_SUCCESS:
            self.gate_stream = None
            return self.timed_once_ms(enqueue), False
        try:
            _ok(rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
            enqueue()
            _ok(rt.cudaEventRecord(self.end, self.stream), "cudaEventRecord")
        finally:  # never leave the stream blocked on the flag
            err, = driver.cuStreamWriteValue32(driver.CUstream(int(self.gate_stream)), driver.CUdeviceptr(flag_ptr),
                                               1, 0)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuStreamWriteValue32: {err.name}")
        _ok(rt.cudaEventSynchronize(self.end), "cudaEventSynchronize")
        _ok(rt.cudaGetLastError(), "launch")
        return float(_ok(rt.cudaEventElapsedTime(self.start, self.end), "cudaEventElapsedTime")), True

    def destroy_graph(self, graph, exe) -> None:
        self.rt.cudaGraphExecDestroy(exe)
        self.rt.cudaGraphDestroy(graph)


# ------------------------------------------------------------------------------------------------
# Kernels behind the shared C ABI
# ------------------------------------------------------------------------------------------------

class EvoKernel:
    """A compiled evogemm kernel library (C ABI version 1)."""

    def __init__(self, path: str, knobs: list[int]):
        self.lib = ctypes.CDLL(path)
        self.lib.evogemm_abi_version.restype = ctypes.c_int
        version = self.lib.evogemm_abi_version()
        if version != 1:
            raise RuntimeError(f"{path}: C ABI version {version}, expected 1")
        i, vp = ctypes.c_int, ctypes.c_void_p
        self.lib.evogemm_run.argtypes = [i, i, i, vp, vp, vp, vp, ctypes.c_size_t, vp, i, vp]
        self.lib.evogemm_run.restype = i
        self.lib.evogemm_workspace_size.argtypes = [i, i, i, vp, i]
        self.lib.evogemm_workspace_size.restype = ctypes.c_size_t
        self.lib.evogemm_can_implement.argtypes = [i, i, i, vp, i]
        self.lib.evogemm_can_implement.restype = i
        self.knobs = (ctypes.c_int32 * max(1, len(knobs)))(*knobs)
        self.n_knobs = len(knobs)

    def can_implement(self, m: int, n: int, k: int) -> int:
        return self.lib.evogemm_can_implement(m, n, k, ctypes.cast(self.knobs, ctypes.c_void_p), self.n_knobs)

    def workspace_size(self, m: int, n: int, k: int) -> int:
        return int(self.lib.evogemm_workspace_size(m, n, k, ctypes.cast(self.knobs, ctypes.c_void_p), self.n_knobs))

    def run(self, m, n, k, a_ptr, w_ptr, c_ptr, ws_ptr, ws_bytes, stream_ptr) -> int:
        return self.lib.evogemm_run(m, n, k, a_ptr, w_ptr, c_ptr, ws_ptr, ws_bytes,
                                    ctypes.cast(self.knobs, ctypes.c_void_p), self.n_knobs, stream_ptr)


STATUS_TEXT = {1: "cannot implement this problem", 2: "workspace too small", 3: "initialisation failed",
               4: "launch failed", 5: "invalid argument"}


# ------------------------------------------------------------------------------------------------
# Buffers: rotating input sets, canary-guarded outputs
# ------------------------------------------------------------------------------------------------

@dataclass
class Problem:
    m: int
    n: int
    k: int

    @property
    def set_bytes(self) -> int:
        return 2 * (self.m * self.k + self.n * self.k + self.m * self.n)


@dataclass
class InputSet:
    a: Any       # (M, K) fp16
    w: Any       # (N, K) fp16
    wt: Any      # (K, N) fp16, W^T contiguous (for the NN baselines); created lazily
    c_flat: Any  # fp16 [canary | C | canary]
    c: Any       # (M, N) view inside c_flat

    def c_ptr(self) -> int:
        return self.c.data_ptr()


def _normal(torch, shape, gen):
    return torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32).to(torch.float16)


def make_set(torch, p: Problem, seed: int, need_wt: bool) -> InputSet:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    a = _normal(torch, (p.m, p.k), gen)
    w = _normal(torch, (p.n, p.k), gen)
    c_flat = torch.empty(p.m * p.n + 2 * CANARY_ELEMS, device="cuda", dtype=torch.float16)
    c = c_flat[CANARY_ELEMS:CANARY_ELEMS + p.m * p.n].view(p.m, p.n)
    wt = w.t().contiguous() if need_wt else None
    s = InputSet(a, w, wt, c_flat, c)
    poison(torch, s)
    return s


def poison(torch, s: InputSet) -> None:
    raw = s.c_flat.view(torch.int16)
    raw.fill_(CANARY_FP16)
    s.c.view(torch.int16).fill_(NAN_FP16)
    torch.cuda.synchronize()  # the kernel under test runs on another stream


def check_output(torch, s: InputSet, ref, tolerance: float) -> "tuple[bool, float, str | None, bool]":
    """(passed, rel_error, reason, corrupted). `ref` is the fp32 reference of this set."""
    raw = s.c_flat.view(torch.int16)
    head = raw[:CANARY_ELEMS]
    tail = raw[CANARY_ELEMS + s.c.numel():]
    if bool((head != CANARY_FP16).any()) or bool((tail != CANARY_FP16).any()):
        return False, math.inf, "wrote outside C (canary band overwritten)", True
    out = s.c.float()
    nan = int(torch.isnan(out).sum())
    if nan:
        return False, math.inf, f"{nan} of {out.numel()} outputs never written (NaN poison left)", False
    err = float(torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref))
    if not math.isfinite(err) or err > tolerance:
        return False, err, f"relative error {err:.3g} > {tolerance:g}", False
    return True, err, None, False


def reference(torch, s: InputSet):
    return torch.matmul(s.a.float(), s.w.float().t())


# ------------------------------------------------------------------------------------------------
# Candidates: evogemm kernels and vendor baselines behind one "enqueue on set i" interface
# ------------------------------------------------------------------------------------------------

@dataclass
class Candidate:
    id: str
    kind: str                                # "kernel" | "baseline"
    enqueue: Callable[[InputSet], None] = None
    result: dict = field(default_factory=dict)
    graph: Any = None
    exe: Any = None
    launches: int = 0
    samples: list = field(default_factory=list)
    alive: bool = True


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

    # -- protocol ------------------------------------------------------------------------------
    def send(self, msg: dict) -> None:
        self.proto.write(json.dumps(msg) + "\n")
        self.proto.flush()

    def running(self, cid: str, phase: str) -> None:
        self.send({"type": "running", "id": cid, "phase": phase})

    # -- setup ---------------------------------------------------------------------------------
    def info(self) -> dict:
        return {"device": self.device_name, "sm_count": self.sm_count, "l2_bytes": self.l2_bytes,
                "torch": self.torch.__version__, "cuda": self.torch.version.cuda}

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

    def load_kernel(self, spec: dict) -> EvoKernel:
        key = spec["lib"] + ":" + ",".join(map(str, spec.get("knobs", [])))
        if key not in self.kernels:
            self.kernels[key] = EvoKernel(spec["lib"], list(spec.get("knobs", [])))
        return self.kernels[key]

    def kernel_candidate(self, spec: dict, p: Problem) -> Candidate:
        torch = self.torch
        cand = Candidate(id=spec["id"], kind="kernel")
        self.running(cand.id, "load")  # loading runs the library's host code: blame it if that dies
        try:
            kernel = self.load_kernel(spec)
        except (OSError, RuntimeError) as exc:
            cand.alive = False
            cand.result = {"status": "unsupported", "reason": f"cannot load kernel library: {exc}"}
            return cand
        code = kernel.can_implement(p.m, p.n, p.k)
        if code != 0:
            cand.alive = False
            cand.result = {"status": "unsupported",
                           "reason": f"kernel refuses {p.m}x{p.n}x{p.k}: {STATUS_TEXT.get(code, code)}"}
            return cand
        ws_bytes = kernel.workspace_size(p.m, p.n, p.k)
        workspace = torch.empty(max(ws_bytes, 256), dtype=torch.uint8, device="cuda")
        stream = self.cuda.stream_ptr

        def enqueue(s: InputSet, _k=kernel, _ws=workspace, _wsb=ws_bytes) -> None:
            status = _k.run(p.m, p.n, p.k, s.a.data_ptr(), s.w.data_ptr(), s.c_ptr(), _ws.data_ptr(),
                            max(_wsb, 256), stream)
            if status != 0:
                raise RuntimeError(f"evogemm_run returned {status} ({STATUS_TEXT.get(status, '?')})")

        cand.enqueue = enqueue
        cand.result["workspace_bytes"] = ws_bytes
        return cand

    def baseline_candidates(self, names: list[str], p: Problem) -> list[Candidate]:
        torch = self.torch
        out = []
        ext = torch.cuda.ExternalStream(self.cuda.stream_ptr)
        for name in names:
            cand = Candidate(id=name, kind="baseline")
            self.running(name, "setup")
            try:
                if name in ("torch_tn", "torch_nn"):
                    def enqueue(s: InputSet, _nn=(name == "torch_nn")) -> None:
                        with torch.cuda.stream(ext):
                            if _nn:
                                torch.matmul(s.a, s.wt, out=s.c)
                            else:
                                torch.matmul(s.a, s.w.t(), out=s.c)
                    cand.enqueue = enqueue
                elif name.startswith("cublaslt_"):
                    from . import cublaslt
                    _, _mode, formulation = (name.split("_") + ["tn"])[:3]
                    plan = cublaslt.plan(p.m, p.n, p.k, formulation=formulation)
                    workspace = torch.empty(cublaslt.WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
                    cand.result["algorithms"] = len(plan.algos)
                    cand.lt = (plan, workspace)

                    def enqueue(s: InputSet, _c=cand, _nn=(formulation == "nn")) -> None:
                        plan_, ws_ = _c.lt
                        plan_.run(_c.lt_index, (s.wt if _nn else s.w).data_ptr(), s.a.data_ptr(), s.c_ptr(),
                                  ws_.data_ptr(), self.cuda.stream_ptr)
                    cand.lt_index = 0
                    cand.enqueue = enqueue
                else:
                    raise ValueError(f"unknown baseline {name!r}")
            except Exception as exc:  # a baseline that cannot run is reported, not fatal
                cand.alive = False
                cand.result = {"status": "unsupported", "reason": f"{type(exc).__name__}: {exc}"}
            out.append(cand)
        return out

    # -- the measurement ----------------------------------------------------------------------------
    def measure(self, req: dict) -> dict:
        torch = self.torch
        cfg = dict(TIMING_DEFAULTS)
        cfg.update(req.get("config") or {})
        modes = set(req.get("modes") or ["device"])
        p = Problem(*req["problem"])
        rng = random.Random(req.get("seed", 0))
        t_start = time.monotonic()
        base_names = list(req.get("baselines") or [])
        need_wt = any(n.endswith("_nn") for n in base_names)

        cands = [self.kernel_candidate(spec, p) for spec in req.get("kernels", [])]
        cands += self.baseline_candidates(base_names, p)

        # 1. correctness gate: fresh inputs per seed
        for seed_i in range(int(cfg["seeds"])):
            s = make_set(torch, p, seed=rng.randrange(1 << 30), need_wt=need_wt)
            ref = reference(torch, s)
            torch.cuda.synchronize()
            for cand in cands:
                if not cand.alive:
                    continue
                self.gate_one(cand, s, ref, cfg, p)
            del s, ref
        live = [c for c in cands if c.alive]
        # 2. rotating input sets: >= l2_multiple x L2 in total when one set fits in L2
        n_sets = max(2, math.ceil(cfg["l2_multiple"] * self.l2_bytes / p.set_bytes)) if live else 0
        n_sets = min(n_sets, max(2, int((8 << 30) // p.set_bytes)))
        sets = [make_set(torch, p, seed=rng.randrange(1 << 30), need_wt=need_wt) for _ in range(n_sets)]
        torch.cuda.synchronize()
        if any(c.alive and c.id.startswith("cublaslt_autotuned") for c in cands):
            self.autotune(cands, sets, cfg)
        live = [c for c in cands if c.alive]

        # 3. graphs of back-to-back launches over the sets
        for cand in live:
            try:
                self.running(cand.id, "capture")
                est_ms = min(self.cuda.timed_once_ms(lambda: cand.enqueue(sets[0])) for _ in range(3))
                launches = max(n_sets, min(int(cfg["max_launches"]), math.ceil(cfg["target_replay_ms"] / max(est_ms, 1e-3))))
                launches = int(math.ceil(launches / n_sets) * n_sets) if launches <= 4 * n_sets else launches
                cand.launches = launches
                cand.graph, cand.exe = self.cuda.capture(lambda: [cand.enqueue(sets[i % n_sets]) for i in range(launches)])
            except KernelFault:
                raise
            except Exception as exc:
                cand.alive = False
                cand.result.update(status="unsupported", reason=f"graph capture failed: {type(exc).__name__}: {exc}")
        live = [c for c in cands if c.alive]

        # 4. warm-up >= warmup_s over all candidates, round robin
        if live:
            t0 = time.monotonic()
            while time.monotonic() - t0 < cfg["warmup_s"]:
                for cand in live:
                    self.running(cand.id, "warmup")
                    self.cuda.replay_ms(cand.exe)

        # 5. interleaved timing rounds; the last round re-checks each candidate's output
        clocks_before = self.clocks()
        repeats = int(cfg["repeats"])
        for r in range(repeats):
            order = live[:]
            rng.shuffle(order)
            for cand in order:
                final = sets[(cand.launches - 1) % n_sets]
                if r == repeats - 1:
                    poison(torch, final)  # the last timed run must write every element again
                self.running(cand.id, "time")
                ms = self.cuda.replay_ms(cand.exe)
                cand.samples.append(ms * 1000.0 / cand.launches)
                if r == repeats - 1:
                    ok, err, reason, corrupted = check_output(torch, final, reference(torch, final), cfg["tolerance"])
                    if corrupted:
                        raise KernelFault(f"{cand.id}: {reason} during timing")
                    cand.result["recheck_error"] = err
                    if not ok:
                        cand.result.update(status="wrong", reason=f"output after timing: {reason}")
                        cand.alive = False
        clocks_after = self.clocks()
        for cand in cands:
            if cand.samples and cand.alive:
                cand.result["device"] = _summary(cand.samples)
                cand.result["launches_per_replay"] = cand.launches
                cand.result.setdefault("status", "ok")

        live = [c for c in cands if c.alive and c.samples]
        # 6. server mode: one launch after an idle gap, L2 flushed
        if "server" in modes and live:
            samples = {c.id: [] for c in live}
            flag = torch.zeros(1, dtype=torch.int32, device="cuda")
            gated = True
            for _ in range(int(cfg["server_samples"])):
                order = live[:]
                rng.shuffle(order)
                for cand in order:
                    s = sets[rng.randrange(n_sets)]
                    flag.zero_()
                    self.flush_buf.zero_()  # evict L2
                    torch.cuda.synchronize()
                    time.sleep(rng.expovariate(1.0 / (cfg["server_gap_ms"] / 1000.0)))
                    self.running(cand.id, "server")
                    ms, was_gated = self.cuda.gated_once_ms(lambda: cand.enqueue(s), flag.data_ptr())
                    gated = gated and was_gated
                    samples[cand.id].append(1000.0 * ms)
            for cand in live:
                cand.result["server"] = _summary(samples[cand.id])
                cand.result["server_gated"] = gated
        # 7. call latency: one synchronised call from Python
        if "call" in modes and live:
            samples = {c.id: [] for c in live}
            for _ in range(int(cfg["call_samples"])):
                for cand in live:
                    s = sets[rng.randrange(n_sets)]
                    self.running(cand.id, "call")
                    t = time.perf_counter()
                    cand.enqueue(s)
                    self.cuda.sync()
                    samples[cand.id].append((time.perf_counter() - t) * 1e6)
            for cand in live:
                cand.result["call"] = _summary(samples[cand.id])

        for cand in cands:
            if cand.exe is not None:
                self.cuda.destroy_graph(cand.graph, cand.exe)
        sets.clear()  # free the input sets before returning the cache to the driver
        torch.cuda.empty_cache()
        return {"type": "result", "problem": req["problem"], "n_sets": n_sets,
                "kernels": {c.id: c.result for c in cands if c.kind == "kernel"},
                "baselines": {c.id: c.result for c in cands if c.kind == "baseline"},
                "gpu_seconds": time.monotonic() - t_start, "info": self.info(),
                "clocks": {"before_timing": clocks_before if live else {}, "after_timing": clocks_after if live else {}}}

    def gate_one(self, cand: Candidate, s: InputSet, ref, cfg: dict, p: Problem) -> None:
        torch = self.torch
        poison(torch, s)
        self.running(cand.id, "gate")
        try:
            cand.enqueue(s)
            self.cuda.sync(f"{cand.id} gate run")
        except KernelFault:
            raise
        except Exception as exc:
            cand.alive = False
            cand.result.update(status="unsupported" if "returned 1" in str(exc) else "wrong",
                               reason=f"{type(exc).__name__}: {exc}")
            return
        ok, err, reason, corrupted = check_output(torch, s, ref, cfg["tolerance"])
        if corrupted:
            raise KernelFault(f"{cand.id}: {reason}")
        prev = cand.result.get("rel_error")
        cand.result["rel_error"] = err if prev is None or not math.isfinite(err) else max(prev, err)
        if not ok:
            cand.alive = False
            cand.result.update(status="wrong", reason=reason)

    def autotune(self, cands: list[Candidate], sets: list[InputSet], cfg: dict) -> None:
        """cuBLASLt autotuned: up to `autotune_algos` heuristic algorithms, each checked by the gate
        and timed by graph replay over the same rotated input sets as the final timing (so the pick
        is not made on a warm L2); the fastest that passes is kept, with its own gate error."""
        torch = self.torch
        check = sets[0]
        ref = reference(torch, check)
        launches = max(len(sets), 10)
        for cand in cands:
            if cand.kind != "baseline" or not cand.alive or not cand.id.startswith("cublaslt_autotuned"):
                continue
            plan = cand.lt[0]
            best = None
            tried = 0
            for idx in range(min(len(plan.algos), int(cfg["autotune_algos"]))):
                cand.lt_index = idx
                self.running(cand.id, f"autotune algorithm {idx}")
                try:
                    poison(torch, check)
                    cand.enqueue(check)
                    self.cuda.sync()
                    ok, err, _, corrupted = check_output(torch, check, ref, cfg["tolerance"])
                    if corrupted:
                        raise KernelFault(f"cuBLASLt algorithm {idx} wrote outside C")
                    if not ok:
                        continue
                    graph, exe = self.cuda.capture(lambda: [cand.enqueue(sets[i % len(sets)]) for i in range(launches)])
                    try:
                        self.cuda.replay_ms(exe)
                        times = [self.cuda.replay_ms(exe) / launches for _ in range(int(cfg["autotune_iters"]))]
                    finally:
                        self.cuda.destroy_graph(graph, exe)
                    tried += 1
                    t = sorted(times)[len(times) // 2]
                    if best is None or t < best[0]:
                        best = (t, idx, err)
                except KernelFault:
                    raise
                except Exception:
                    continue
            if best is None:
                cand.alive = False
                cand.result.update(status="unsupported", reason="no cuBLASLt algorithm passed the gate")
            else:
                cand.lt_index = best[1]
                cand.result.update(algorithm_index=best[1], algorithms_timed=tried, rel_error=best[2])


def _summary(samples: list[float]) -> dict:
    xs = sorted(samples)
    n = len(xs)
    median = xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
    return {"median_us": median, "min_us": xs[0], "max_us": xs[-1], "repeats": n}


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the protocol
    try:
        worker = Worker(proto)
    except Exception as exc:
        proto.write(json.dumps({"type": "fatal", "error": f"worker start failed: {type(exc).__name__}: {exc}"}) + "\n")
        proto.flush()
        return 3
    worker.send({"type": "ready", "info": worker.info(), "pid": os.getpid()})
    for line in sys.stdin:
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


if __name__ == "__main__":
    sys.exit(main())
