"""Timing options of the GPU worker: their defaults, the protocol minimums, and their checks.

Pure Python (no torch, no CUDA): the campaign schema and the bench CLI check options with
`check_timing` on machines without a GPU (they import it as evaluator.gpu_worker.check_timing).
"""

from __future__ import annotations

from types import MappingProxyType

# Measurement settings (MEASURE.md): correctness seeds and tolerance, timing repeats and warm-up,
# graph size, input rotation, server-mode and call-latency samples, cuBLASLt autotuning, and the
# rounds of a bench's focused run (a shape's best kernel, its twin and the best vendor baseline
# alone, evaluator/gpu.py focused_pair: the paired and A/A figures it quotes; at least `repeats`).
TIMING_DEFAULTS = MappingProxyType({
    "seeds": 3, "tolerance": 1e-3, "repeats": 10, "warmup_s": 1.0, "target_replay_ms": 2.0,
    "max_launches": 2000, "l2_multiple": 3.0, "server_samples": 10, "server_gap_ms": 10.0,
    "call_samples": 30, "autotune_algos": 100, "autotune_iters": 5, "autotune_max_launches": 4096,
    "autotune_finalists": 3, "focused_repeats": 21})
# Below these a figure does not meet MEASURE.md's protocol (tests may go lower; reports say so).
# (the gate's own settings, seeds and tolerance, have hard floors instead: gate_violation)
PROTOCOL_MINIMUMS = MappingProxyType({"repeats": 5, "warmup_s": 1.0, "l2_multiple": 3.0})


def gate_violation(options: "dict | None") -> "tuple[str, str] | None":
    """(key, why) when `options` would loosen the correctness gate, else None.

    The defaults are the protocol's gate (MEASURE.md, "Correctness gate"): options may make it
    stricter (a smaller `tolerance`, more `seeds`), never looser. (The accumulation bound of the
    gate is not an option at all: evaluator/worker_gate.py.)"""
    options = dict(options or {})
    tol, seeds = options.get("tolerance"), options.get("seeds")
    if _number(tol) and tol > TIMING_DEFAULTS["tolerance"]:
        floor = TIMING_DEFAULTS["tolerance"]
        return "tolerance", (f"the correctness gate cannot be loosened: tolerance {tol:g} is looser than the "
                             f"protocol's {floor:g} (it may only be made stricter: <= {floor:g})")
    if _number(seeds) and seeds < TIMING_DEFAULTS["seeds"]:
        floor = TIMING_DEFAULTS["seeds"]
        return "seeds", (f"the correctness gate cannot be loosened: seeds {seeds:g} checks fewer input sets than "
                         f"the protocol's {floor:g} (it may only be made stricter: >= {floor:g})")
    return None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_timing(options: "dict | None") -> list[str]:
    """Raise ValueError for unknown keys, bad values or a loosened gate; return the protocol
    minimums of timing that are not met (those only warn: reports say so)."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(TIMING_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown timing option(s) {', '.join(unknown)}; allowed: {', '.join(TIMING_DEFAULTS)}")
    for key, value in options.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"timing option {key} must be a non-negative number, got {value!r}")
    loosened = gate_violation(options)
    if loosened:
        raise ValueError(loosened[1])
    return [f"{k}={options[k]} < {v}" for k, v in PROTOCOL_MINIMUMS.items() if k in options and options[k] < v]


def timing_config(options: "dict | None") -> dict:
    """The settings one measure request runs with: the defaults, overridden by the request's
    options (already checked by the parent; the worker does not check them again)."""
    cfg = dict(TIMING_DEFAULTS)
    cfg.update(options or {})
    return cfg
