"""The search space of the `sm90_padded` family: sm90_cutlass for unaligned N or K.

The kernel is sm90_cutlass's, with the same parameters and rules, plus sm90_lean's schedule "ws"
as a third schedule. The family adds an aligned copy of whatever operand is unaligned inside the
timed call (see templates/sm90_padded). It takes problems whose N or K is not a multiple of 8
and, with `k_pad: 64`, also those whose K is not a multiple of 64: the copy then gives A and W a
row pitch of a whole number of 128-byte lines.
"""

from __future__ import annotations

from dataclasses import replace

import random

from . import sm90_cutlass_space as _sm90
from .sm90_lean_space import WS_PERSISTENT, WS_SCHEDULE
from .problem import Problem
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "sm90_padded"


def knobs(params) -> list[int]:
    """sm90_cutlass's runtime knobs, then the K padding (knob 5 in templates/sm90_padded)."""
    return [*_sm90.knobs(params), int(params["k_pad"])]


def _unaligned(p, problem: Problem):
    if problem.n % 8 == 0 and problem.k % p["k_pad"] == 0:   # (64 is a multiple of 8)
        what = "N and K multiples of 8" if p["k_pad"] == 8 else "N a multiple of 8, K of 64"
        return (f"sm90_padded with k_pad {p['k_pad']} is for problems that need a copy; {problem.name} is "
                f"aligned ({what}): use sm90_cutlass, which is this kernel without the copies")
    return None


C_ALIGN = ParamSpec("c_align", (8, 4, 2, 1),
                    doc="8: write a C of pitch N rounded up to 8, then copy it out (when N % 8 != 0); "
                        "1, 2, 4: store C directly, that many elements at a time (nosmem epilogue)")


K_PAD = ParamSpec("k_pad", (8, 64), kind="runtime",
                  doc="the padded K of A and W: rounded up to 8 (TMA's 16-byte rows) or to 64 (rows of "
                      "whole 128-byte lines, the pitch TMA reads fastest); the copy runs when K is not a "
                      "multiple of it")


def _direct_needs_nosmem(p):
    if p["c_align"] < 8 and p["epilogue"] != "nosmem":
        return f"c_align {p['c_align']} stores C from registers: it needs the nosmem epilogue, not TMA"
    return None


def _fix_direct(p: Params, rng: random.Random) -> Params:
    if rng.random() < 0.5:
        p["epilogue"] = "nosmem"
    else:
        p["c_align"] = 8
    return p


def _c_alignment(p, problem: Problem):
    if p["c_align"] < 8 and problem.n % p["c_align"]:
        return f"N={problem.n} is not a multiple of c_align={p['c_align']}"
    return None


def make_space() -> SearchSpace:
    base = _sm90.make_space(warpgroup_split=False)
    params = _sm90.derived_params(base.params, fixed=_sm90.AUTO_EPILOGUE_TILE, replaced=(WS_SCHEDULE,))
    return replace(base, family=FAMILY, params=(*params, C_ALIGN, K_PAD),
                   rules=(*base.rules, Rule("direct-c-nosmem", "c_align < 8 only with the nosmem epilogue",
                                            _direct_needs_nosmem, _fix_direct),
                          WS_PERSISTENT),
                   shape_rules=(ShapeRule("unaligned", "N or K not a multiple of 8, or K not a multiple of k_pad",
                                          _unaligned),
                                ShapeRule("c-alignment", "N a multiple of c_align when C is stored directly",
                                          _c_alignment)),
                   description="sm90_cutlass with aligned copies of unaligned operands inside the timed call "
                               "(any N and K)")
