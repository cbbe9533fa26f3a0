"""The correctness gate of the GPU worker (../shared/MEASURE.md): every candidate runs on fresh
standard-normal inputs for several seeds, into an output poisoned with NaN and guarded by canary
bands, and is compared with the fp32 GPU reference; the output of the last timed run is checked
again. A write outside C is a KernelFault: the worker's memory can no longer be trusted.

Two bounds, both must hold:
- `rel_error` = ||C - ref|| / ||ref|| against the fp32 reference, at most `tolerance` (1e-3): the
  fp16 rounding of the output alone puts every correct kernel near 2.1e-4.
- the accumulation bound, which a campaign cannot change: `acc_error` = ||C - ref16|| / ||ref16||
  against the fp32 reference rounded to fp16. A kernel that accumulates in fp32 differs from ref16
  only where its summation order moves a value across an fp16 rounding boundary, so its acc_error
  is tiny at every K; one that accumulates in fp16 (or rounds partial sums to fp16) carries the
  fp16 rounding of every partial sum. Measured on an H200 over the public suite plus K = 64
  shapes (docs/results/h200-gate-fp16-accumulation-*.log): an fp32-accumulating sm90 kernel lands at
  about 9e-7 * sqrt(K) (1e-5 at K = 64, 1.5e-4 at K = 28672: the tensor cores' fp32 accumulation is
  not exact), an fp16-accumulating one at about 5e-5 * sqrt(K) (3.7e-4 at K = 64), 50x apart. The
  limit is max(ACC_FLOOR, ACC_SQRT_K * sqrt(K)): 4x the fp32 line, 13x or more below the fp16 one.
  It does not follow the vendor's error: a weak vendor result (cuBLAS is less accurate on some
  unaligned shapes) must not open the gate, and an accurate one must not refuse an honest fp32
  kernel that sums in another order. The vendor's acc_error on the same inputs is reported beside
  each kernel's, as a check of the calibration.
- A small output: the norm over a few thousand elements or fewer moves in steps. An fp32-accumulating kernel
  rounds an element to the other side of an fp16 rounding boundary now and then (0.3-1% of the elements at K of a
  few hundred), and each such element is one fp16 step off ref16: at 13x77x200 (1,001 elements) a handful of them
  put cuBLAS's own output at 5.06e-5, over ACC_FLOOR (session 60, an H100). So an output of at least
  ACC_STEP_MIN_ELEMENTS elements over the limit still passes when no element is more than one fp16 step from ref16
  (or ACC_STEP_FLOOR of the output's rms: an element near zero has a step far below an honest fp32 error) and at
  most s + 3 sqrt(s) + 1 elements differ from it, s = ACC_STEP_SHARE x elements. Accumulating in fp16 rounds
  every partial sum and puts many elements two or more steps off (3-6 at K = 64), so this does not open the gate
  to it: in tests/test_gpu_worker_units.py's simulation of both kinds of kernel, 40 draws at each of 7 shapes of
  64-1,001 and 4,096 elements and K 17-4,096, no fp16-accumulating output passes the allowance and no fp32 one is refused by
  it. Below 64 elements one fp16 step can be all an fp16 accumulator is off, so the norm alone decides there; at
  the public shapes (4,096 elements and more) it decides as measured.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .worker_candidates import Candidate
from .worker_cuda import KernelFault
from .worker_inputs import CANARY_ELEMS, CANARY_FP16, InputSet, Problem, make_set, poison, reference

if TYPE_CHECKING:  # only for annotations: the worker imports this module, not the other way
    from .gpu_worker import Worker

# The accumulation bound (module docstring). Constants, not options: no campaign can loosen them.
ACC_FLOOR = 5e-5
ACC_SQRT_K = 3.5e-6
# a small output over the norm limit (module docstring): no element more than one fp16 step (or ACC_STEP_FLOOR of
# the rms) from ref16, and at most s + 3 sqrt(s) + 1 elements one step off, s = ACC_STEP_SHARE x elements
ACC_STEP_MIN_ELEMENTS = 64
ACC_STEP_FLOOR = 2.0 ** -14
ACC_STEP_SHARE = 0.02


def accumulation_limit(k: int) -> float:
    """The most any kernel may differ from the fp16-rounded reference at reduction length K."""
    return max(ACC_FLOOR, ACC_SQRT_K * math.sqrt(max(1, k)))


@dataclass
class GateReference:
    """What a set's outputs are checked against: the fp32 product, its fp16 rounding, the
    accumulation limit at this K, and the vendor's own error against ref16 (reported)."""

    ref: Any         # fp32 (M, N)
    ref16: Any       # fp32 (M, N) holding the fp16 rounding of ref
    vendor_acc: float
    acc_limit: float



def _rel(torch, out, ref) -> float:
    return float(torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref))


def gate_reference(torch, s: InputSet) -> GateReference:
    ref = reference(torch, s)
    ref16 = ref.half().float()
    vendor = torch.matmul(s.a, s.w.t()).float()
    vendor_acc = _rel(torch, vendor, ref16)
    del vendor
    return GateReference(ref, ref16, vendor_acc, accumulation_limit(int(s.a.shape[1])))


def steps_within_allowance(off_by_more: int, off_by_one: int, elements: int) -> bool:
    """Whether an output whose elements are, against ref16, `off_by_more` of them more than one fp16 step off and
    `off_by_one` one step off, is what an fp32-accumulating kernel gives (the small-output allowance)."""
    share = ACC_STEP_SHARE * elements
    return (elements >= ACC_STEP_MIN_ELEMENTS and off_by_more == 0
            and off_by_one <= share + 3.0 * math.sqrt(share) + 1.0)


def fp16_steps_off(torch, out, ref16) -> "tuple[int, int]":
    """(elements more than one fp16 step from ref16, elements one step from it) of an fp16 output held in fp32.
    The step of an element is the spacing of fp16 values just above |ref16| (an output one value below across a
    power of two is half of it away), and at least ACC_STEP_FLOOR of the output's rms."""
    a = ref16.abs().half()
    step = (a.view(torch.int16) + 1).view(torch.float16).float() - a.float()
    rms = float(torch.linalg.vector_norm(ref16)) / math.sqrt(max(1, ref16.numel()))
    diff = (out - ref16).abs()
    more = int((diff > torch.clamp(step, min=ACC_STEP_FLOOR * rms)).sum())
    return more, int((diff > 0).sum()) - more


def judge(err: float, acc: float, tolerance: float, limit: float, vendor_acc: float,
          enforce_acc: bool = True, steps_ok: bool = False) -> "str | None":
    """Why an output with these errors fails the gate, or None when it passes. The accumulation
    bound is enforced for kernels; a vendor baseline is held to `tolerance` only (dropping a fast
    vendor algorithm for its accuracy would flatter the kernels compared with it). steps_ok: the
    output is within the small-output allowance (steps_within_allowance), which lets it pass the
    accumulation bound."""
    if not math.isfinite(err) or err > tolerance:
        return f"relative error {err:.3g} > {tolerance:g}"
    if enforce_acc and not steps_ok and (not math.isfinite(acc) or acc > limit):
        return (f"error against the fp32 reference rounded to fp16 {acc:.3g} > {limit:.3g} (vendor {vendor_acc:.3g} "
                "on the same inputs): accumulation below fp32 precision")
    return None


def check_output(torch, s: InputSet, gref: GateReference, tolerance: float, enforce_acc: bool = True
                 ) -> "tuple[bool, float, str | None, bool, float]":
    """(passed, rel_error, reason, corrupted, acc_error) of the output in `s`."""
    raw = s.c_flat.view(torch.int16)
    head = raw[:CANARY_ELEMS]
    tail = raw[CANARY_ELEMS + s.c.numel():]
    if bool((head != CANARY_FP16).any()) or bool((tail != CANARY_FP16).any()):
        return False, math.inf, "wrote outside C (canary band overwritten)", True, math.inf
    out = s.c.float()
    nan = int(torch.isnan(out).sum())
    if nan:
        return False, math.inf, f"{nan} of {out.numel()} outputs never written (NaN poison left)", False, math.inf
    err = _rel(torch, out, gref.ref)
    acc = _rel(torch, out, gref.ref16)
    steps_ok = False
    if enforce_acc and math.isfinite(acc) and acc > gref.acc_limit:   # the small-output allowance
        steps_ok = steps_within_allowance(*fp16_steps_off(torch, out, gref.ref16), out.numel())
    reason = judge(err, acc, tolerance, gref.acc_limit, gref.vendor_acc, enforce_acc, steps_ok)
    return reason is None, err, reason, False, acc


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
        gref = gate_reference(torch, s)
        torch.cuda.synchronize()
        for cand in cands:
            if not cand.alive:
                continue
            gate_one(w, cand, s, gref, cfg["tolerance"])
        del s, gref


def _record_errors(cand: Candidate, err: float, acc: float, gref: GateReference) -> None:
    cand.result["rel_error"] = merged_rel_error(cand.result.get("rel_error"), err)
    cand.result["acc_error"] = merged_rel_error(cand.result.get("acc_error"), acc)
    cand.result["acc_limit"] = min(cand.result.get("acc_limit", math.inf), gref.acc_limit)
    cand.result["vendor_acc_error"] = merged_rel_error(cand.result.get("vendor_acc_error"), gref.vendor_acc)


def gate_one(w: "Worker", cand: Candidate, s: InputSet, gref: GateReference, tolerance: float) -> None:
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
    ok, err, reason, corrupted, acc = check_output(torch, s, gref, tolerance, enforce_acc=cand.kind == "kernel")
    if corrupted:
        raise KernelFault(f"{cand.id}: {reason}")
    _record_errors(cand, err, acc, gref)
    if not ok:
        cand.alive = False
        cand.result.update(status="wrong", reason=reason)


def recheck_output(torch, cand: Candidate, s: InputSet, tolerance: float) -> None:
    """Check the output the candidate's last timed replay wrote into `s` (poisoned before it)."""
    ok, err, reason, corrupted, acc = check_output(torch, s, gate_reference(torch, s), tolerance,
                                                   enforce_acc=cand.kind == "kernel")
    if corrupted:
        raise KernelFault(f"{cand.id}: {reason} during timing")
    cand.result["recheck_error"] = err
    cand.result["recheck_acc_error"] = acc
    if not ok:
        cand.result.update(status="wrong", reason=f"output after timing: {reason}")
        cand.alive = False
