"""The simulator model of the `sm90_padded` family: the sm90_cutlass model (sm90_lean's for the
"ws" schedule) on the aligned problem plus the copies (bytes read and written at HBM bandwidth,
one launch each)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_lean import model as lean_model
from .sim_sm90 import model as sm90_model


def _up(x: int, a: int = 8) -> int:
    return -(-x // a) * a


def copy_bytes(problem: Problem, k_pad: int = 8) -> float:
    """Bytes the pre-pass and post-pass move (each element read once and written once)."""
    M, N, K = problem.m, problem.n, problem.k
    moved = 0.0
    if K % k_pad:
        moved += 2.0 * (M * K + N * K) + 2.0 * (M + N) * _up(K, k_pad)
    if N % 8:
        moved += 2.0 * M * _up(N) + 2.0 * M * N
    return moved


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    k_pad = int(params.get("k_pad", 8))
    inner_model = lean_model if params.get("schedule") == "ws" else sm90_model
    inner = inner_model(params, Problem(problem.m, _up(problem.n), _up(problem.k, k_pad)), sp, dev)
    passes = (problem.k % k_pad != 0) + (problem.n % 8 != 0)
    moved = copy_bytes(problem, k_pad)
    extra = passes * sp.launch_us * 0.5 + moved / (sp.hbm_efficiency * dev.hbm_tbps * 1e6)
    return replace(inner, total_us=inner.total_us + extra, fixed_us=inner.fixed_us + extra,
                   dram_bytes=inner.dram_bytes + moved)
