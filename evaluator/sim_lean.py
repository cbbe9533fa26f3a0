"""The simulator model of the `sm90_lean` family: the sm90_cutlass model of the same tile with one
consumer warpgroup (modelled as ping-pong without the second warpgroup's overlap: its epilogue is
exposed) and without the persistent scheduler's prologue."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from genome import Problem

from .sim_device import DeviceSpec, SimBreakdown, SimParams
from .sim_sm90 import model as sm90_model


def model(params: Mapping[str, Any], problem: Problem, sp: SimParams, dev: DeviceSpec) -> SimBreakdown:
    as_sm90 = dict(params, schedule="pingpong")
    lean = replace(sp, pingpong_epilogue_hidden=0.0, prologue_us=sp.prologue_us * 0.5)
    return sm90_model(as_sm90, problem, lean, dev, persistent=False)
