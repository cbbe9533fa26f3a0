"""What the GPU worker measures: candidates (evogemm kernels and vendor baselines) behind one
"enqueue on input set s" interface, the kernels' shared C ABI, and releasing what a candidate
holds (its CUDA graph, its cuBLASLt plan) once its problem is done. The C ABI binding itself is
evaluator/kernel_abi.py (shared with exported kernel packages).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .kernel_abi import STATUS_TEXT, EvoKernel
from .worker_inputs import InputSet, Problem

if TYPE_CHECKING:  # only for annotations: the worker imports this module, not the other way
    from .gpu_worker import Worker



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
    ref_samples: list = field(default_factory=list)  # the reference's sample taken right before each of ours
    ref_after: list = field(default_factory=list)    # and the one taken right after it
    alive: bool = True
    lt_plan: Any = None       # cublaslt.LtPlan of a cuBLASLt baseline
    lt_workspace: Any = None  # its device workspace (a torch tensor)
    lt_index: int = 0         # the plan's algorithm that enqueue runs

    def release(self, cuda) -> None:
        """Destroy this candidate's graph and close its cuBLASLt plan; a second call does nothing."""
        try:
            if self.exe is not None:
                graph, exe, self.graph, self.exe = self.graph, self.exe, None, None
                cuda.destroy_graph(graph, exe)
        finally:
            if self.lt_plan is not None:
                plan, self.lt_plan = self.lt_plan, None
                plan.close()


def release_candidates(cuda, cands: "list[Candidate]") -> None:
    """Release every candidate, even when releasing one of them fails (that is logged to stderr,
    never raised: this runs while another error may be on its way out)."""
    for cand in cands:
        try:
            cand.release(cuda)
        except Exception as exc:
            print(f"evogemm worker: releasing {cand.id} failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def alive(cands: "list[Candidate]") -> "list[Candidate]":
    return [c for c in cands if c.alive]


def load_kernel(cache: "dict[str, EvoKernel]", spec: dict) -> EvoKernel:
    """The kernel library of `spec`, loaded once per (library, knobs) for the worker's life."""
    key = spec["lib"] + ":" + ",".join(map(str, spec.get("knobs", [])))
    if key not in cache:
        cache[key] = EvoKernel(spec["lib"], list(spec.get("knobs", [])))
    return cache[key]


def kernel_candidate(w: "Worker", spec: dict, p: Problem) -> Candidate:
    """An evogemm kernel as a candidate; not alive if its library cannot be loaded or refuses p."""
    torch = w.torch
    cand = Candidate(id=spec["id"], kind="kernel")
    w.running(cand.id, "load")  # loading runs the library's host code: blame it if that dies
    try:
        kernel = load_kernel(w.kernels, spec)
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
    stream = w.cuda.stream_ptr

    def enqueue(s: InputSet, _k=kernel, _ws=workspace, _wsb=ws_bytes) -> None:
        status = _k.run(p.m, p.n, p.k, s.a.data_ptr(), s.w.data_ptr(), s.c_ptr(), _ws.data_ptr(),
                        max(_wsb, 256), stream)
        if status != 0:
            raise RuntimeError(f"evogemm_run returned {status} ({STATUS_TEXT.get(status, '?')})")

    cand.enqueue = enqueue
    cand.result["workspace_bytes"] = ws_bytes
    return cand
