"""The simulator model of the `sm90_splitk` family: the sm90_cutlass model of a problem with the
same tiles and per-tile work (M x ksplit rows, K / ksplit deep), plus the reduction launch (fp32
partial sums written, read back, fp16 C written)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_sm90 import model as sm90_model


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    splits = int(params["ksplit"])
    inner = sm90_model(params, Problem(problem.m * splits, problem.n, max(8, problem.k // splits)), sp, dev)
    moved = (8.0 * splits + 2.0) * problem.m * problem.n
    reduce_us = sp.launch_us * 0.5 + moved / (sp.hbm_efficiency * dev.hbm_tbps * 1e6)
    return replace(inner, total_us=inner.total_us + reduce_us, reduction_us=inner.reduction_us + reduce_us,
                   mode="split_k", dram_bytes=inner.dram_bytes + moved)
