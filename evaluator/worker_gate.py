"""The correctness gate of the GPU worker (../shared/MEASURE.md): every candidate runs on fresh
standard-normal inputs for several seeds, into an output poisoned with NaN and guarded by canary
bands, and is compared with the fp32 GPU reference; the output of the last timed run is checked
again. A write outside C is a KernelFault: the worker's memory can no longer be trusted.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

from .worker_candidates import Candidate
from .worker_cuda import KernelFault
from .worker_inputs import CANARY_ELEMS, CANARY_FP16, InputSet, Problem, make_set, poison, reference

if TYPE_CHECKING:  # only for annotations: the worker imports this module, not the other way
    from .gpu_worker import Worker


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


def merged_rel_error(prev: "float | None", err: float) -> float:
    """The error to report over several seeds: the worst so far, or a non-finite one as it is."""
    return err if prev is None or not math.isfinite(err) else max(prev, err)


def gate_failure_status(exc: Exception) -> str:
    """A run that raised: 'unsupported' when the kernel said it cannot implement the problem
    (evogemm_run returned 1), else 'wrong'."""
    return "unsupported" if "returned 1" in str(exc) else "wrong"


def run_gate(w: "Worker", cands: "list[Candidate]", p: Problem, cfg: dict, rng: random.Random,
             need_wt: bool) -> None:
    """Check every live candidate on `seeds` fresh input sets; a failure takes it out."""
    torch = w.torch
    for _ in range(int(cfg["seeds"])):
        s = make_set(torch, p, seed=rng.randrange(1 << 30), need_wt=need_wt)
        ref = reference(torch, s)
        torch.cuda.synchronize()
        for cand in cands:
            if not cand.alive:
                continue
            gate_one(w, cand, s, ref, cfg["tolerance"])
        del s, ref


def gate_one(w: "Worker", cand: Candidate, s: InputSet, ref, tolerance: float) -> None:
    torch = w.torch
    poison(torch, s)
    w.running(cand.id, "gate")
    try:
        cand.enqueue(s)
        w.cuda.sync(f"{cand.id} gate run")
    except KernelFault:
        raise
    except Exception as exc:
        cand.alive = False
        cand.result.update(status=gate_failure_status(exc), reason=f"{type(exc).__name__}: {exc}")
        return
    ok, err, reason, corrupted = check_output(torch, s, ref, tolerance)
    if corrupted:
        raise KernelFault(f"{cand.id}: {reason}")
    cand.result["rel_error"] = merged_rel_error(cand.result.get("rel_error"), err)
    if not ok:
        cand.alive = False
        cand.result.update(status="wrong", reason=reason)


def recheck_output(torch, cand: Candidate, s: InputSet, tolerance: float) -> None:
    """Check the output the candidate's last timed replay wrote into `s` (poisoned before it)."""
    ok, err, reason, corrupted = check_output(torch, s, reference(torch, s), tolerance)
    if corrupted:
        raise KernelFault(f"{cand.id}: {reason} during timing")
    cand.result["recheck_error"] = err
    if not ok:
        cand.result.update(status="wrong", reason=f"output after timing: {reason}")
        cand.alive = False
