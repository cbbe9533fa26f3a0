"""The simulator model of the `sm90_swapab_splitk` family: sm90_splitk's model (the GEMM of one split, the
other splits' slices of the kernel's B operand, which is A here, and the reduction launch) on the transposed
problem (N, M, K) that the kernel computes, its GEMM priced by sm90_lean's model for the "ws" schedule and
sm90_cutlass's otherwise, as sm90_swapab's is."""

from __future__ import annotations

from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_lean import model as lean_model
from .sim_sm90 import model as sm90_model
from .sim_splitk import model as splitk_model


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    transposed = Problem(problem.n, problem.m, problem.k, problem.layout)
    return splitk_model(params, transposed, sp, dev,
                        inner_model=lean_model if params["schedule"] == "ws" else sm90_model)
