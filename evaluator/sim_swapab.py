"""The simulator model of the `sm90_swapab` family: the sm90_cutlass model (sm90_lean's for the "ws"
schedule) of the same parameters on the transposed problem (N, M, K), which is the problem that
kernel computes."""

from __future__ import annotations

from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_lean import model as lean_model
from .sim_sm90 import model as sm90_model


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    transposed = Problem(problem.n, problem.m, problem.k, problem.layout)
    return (lean_model if params["schedule"] == "ws" else sm90_model)(params, transposed, sp, dev)
