"""Vendor baselines in the GPU worker: torch.matmul (TN: W as given, NN: W^T stored) and cuBLASLt
(heuristic top-1, or autotuned: the fastest of up to `autotune_algos` heuristic algorithms that
passes the gate, timed over the same rotated input sets as the final timing; where those are more
than `autotune_max_launches`, tiny sets, the algorithms are screened over that many and the fastest
`autotune_finalists` timed again over all of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .timing_stats import autotune_launches, upper_median
from .worker_candidates import Candidate
from .worker_cuda import KernelFault
from .worker_gate import check_output, gate_reference
from .worker_inputs import InputSet, Problem, poison

if TYPE_CHECKING:  # only for annotations: the worker imports this module, not the other way
    from .gpu_worker import Worker


def cublaslt_formulation(name: str) -> str:
    """'cublaslt_<mode>[_<formulation>]' -> the formulation ('tn' unless named)."""
    _, _mode, formulation = (name.split("_") + ["tn"])[:3]
    return formulation


def is_autotuned(cand: Candidate) -> bool:
    return cand.kind == "baseline" and cand.id.startswith("cublaslt_autotuned")


def add_baselines(w: "Worker", names: "list[str]", p: Problem, out: "list[Candidate]") -> None:
    """Append one candidate per baseline name to `out`, each as soon as it exists (so that a
    failure part-way still leaves every cuBLASLt plan made so far where it will be closed). A
    baseline that cannot be set up is reported as unsupported, not raised."""
    ext = w.torch.cuda.ExternalStream(w.cuda.stream_ptr)
    for name in names:
        cand = Candidate(id=name, kind="baseline")
        out.append(cand)
        w.running(name, "setup")
        try:
            if name in ("torch_tn", "torch_nn"):
                _setup_torch(w, cand, ext, nn=(name == "torch_nn"))
            elif name.startswith("cublaslt_"):
                _setup_cublaslt(w, cand, p, cublaslt_formulation(name))
            else:
                raise ValueError(f"unknown baseline {name!r}")
        except Exception as exc:  # a baseline that cannot run is reported, not fatal
            cand.alive = False
            cand.result = {"status": "unsupported", "reason": f"{type(exc).__name__}: {exc}"}


def _setup_torch(w: "Worker", cand: Candidate, ext, nn: bool) -> None:
    torch = w.torch

    def enqueue(s: InputSet, _nn=nn) -> None:
        with torch.cuda.stream(ext):
            if _nn:
                torch.matmul(s.a, s.wt, out=s.c)
            else:
                torch.matmul(s.a, s.w.t(), out=s.c)
    cand.enqueue = enqueue


def _setup_cublaslt(w: "Worker", cand: Candidate, p: Problem, formulation: str) -> None:
    from . import cublaslt
    torch = w.torch
    cand.lt_plan = w.lt_handle().plan(p.m, p.n, p.k, formulation=formulation)
    cand.lt_workspace = torch.empty(cublaslt.WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
    cand.result["algorithms"] = len(cand.lt_plan.algos)
    cand.lt_index = 0
    _describe(cand)

    def enqueue(s: InputSet, _c=cand, _nn=(formulation == "nn")) -> None:
        _c.lt_plan.run(_c.lt_index, (s.wt if _nn else s.w).data_ptr(), s.a.data_ptr(), s.c_ptr(),
                       _c.lt_workspace.data_ptr(), w.cuda.stream_ptr)
    cand.enqueue = enqueue


def autotune(w: "Worker", cands: "list[Candidate]", sets: "list[InputSet]", cfg: dict) -> None:
    """cuBLASLt autotuned: up to `autotune_algos` heuristic algorithms, each checked by the gate
    and timed by graph replay over the same rotated input sets as the final timing (so the pick
    is not made on a warm L2); the fastest that passes is kept, with its own gate error."""
    check = sets[0]
    ref = gate_reference(w.torch, check)
    for cand in cands:
        if cand.alive and is_autotuned(cand):
            _autotune_one(w, cand, sets, check, ref, cfg)


def _autotune_one(w: "Worker", cand: Candidate, sets: "list[InputSet]", check: InputSet, ref, cfg: dict) -> None:
    launches = autotune_launches(len(sets), cfg["autotune_max_launches"])
    timed = []  # (time per launch, algorithm index, gate error)
    for idx in range(min(len(cand.lt_plan.algos), int(cfg["autotune_algos"]))):
        cand.lt_index = idx
        w.running(cand.id, f"autotune algorithm {idx}")
        try:
            err = _gate_algorithm(w, cand, idx, check, ref, cfg["tolerance"])
            if err is None:
                continue
            timed.append((upper_median(_replay_times(w, cand, sets, launches, int(cfg["autotune_iters"]))), idx, err))
        except KernelFault:
            raise
        except Exception:
            continue
    tried = len(timed)
    if launches < len(sets):
        # a screen over the first sets (warmer in L2 than the final timing): its fastest few again over all of them
        # (where every finalist fails to time again, the screen's fastest: the final timing times it anyway)
        finalists = sorted(timed)[:max(1, int(cfg["autotune_finalists"]))]
        timed = _time_again(w, cand, sets, finalists, cfg) or finalists[:1]
    if not timed:
        cand.alive = False
        cand.result.update(status="unsupported", reason="no cuBLASLt algorithm passed the gate")
    else:
        best = min(timed)
        cand.lt_index = best[1]
        cand.result.update(algorithm_index=best[1], algorithms_timed=tried, rel_error=best[2])
        _describe(cand)


def _describe(cand: Candidate) -> None:
    """Record which cuBLASLt algorithm the baseline runs (LtPlan.algo_config); a plan that cannot say is left
    without, never failed for it."""
    try:
        cand.result["algorithm"] = cand.lt_plan.algo_config(cand.lt_index)
    except Exception:
        cand.result.pop("algorithm", None)


def _time_again(w: "Worker", cand: Candidate, sets: "list[InputSet]", finalists: list, cfg: dict) -> list:
    """The finalists (time, algorithm index, gate error) timed over every rotated set."""
    out = []
    for _, idx, err in finalists:
        cand.lt_index = idx
        w.running(cand.id, f"autotune algorithm {idx}, all sets")
        try:
            out.append((upper_median(_replay_times(w, cand, sets, len(sets), int(cfg["autotune_iters"]))), idx, err))
        except KernelFault:
            raise
        except Exception:
            continue
    return out


def _gate_algorithm(w: "Worker", cand: Candidate, idx: int, check: InputSet, ref, tolerance: float) -> "float | None":
    """The gate error of the candidate's current algorithm, or None when it fails the gate."""
    torch = w.torch
    poison(torch, check)
    cand.enqueue(check)
    w.cuda.sync()
    ok, err, _, corrupted, _ = check_output(torch, check, ref, tolerance, enforce_acc=False)
    if corrupted:
        raise KernelFault(f"cuBLASLt algorithm {idx} wrote outside C")
    return err if ok else None


def _replay_times(w: "Worker", cand: Candidate, sets: "list[InputSet]", launches: int, iters: int) -> "list[float]":
    """ms per launch of `iters` replays (after one untimed) of a graph rotating over the sets."""
    graph, exe = w.cuda.capture(lambda i: cand.enqueue(sets[i % len(sets)]), launches)
    try:
        w.cuda.replay_ms(exe)
        return [w.cuda.replay_ms(exe) / launches for _ in range(iters)]
    finally:
        w.cuda.destroy_graph(graph, exe)
