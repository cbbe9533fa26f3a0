"""The search space of the `sm90_padded` family: sm90_cutlass for unaligned N or K.

The kernel is sm90_cutlass's, with the same parameters and rules; the family adds an aligned
copy of whatever operand is unaligned inside the timed call (see templates/sm90_padded). It takes
only problems whose N or K is not a multiple of 8: on aligned problems it is sm90_cutlass.
"""

from __future__ import annotations

from dataclasses import replace

import random

from . import sm90_cutlass_space as _sm90
from .problem import Problem
from .space import ParamSpec, Params, Rule, SearchSpace, ShapeRule

FAMILY = "sm90_padded"
knobs = _sm90.knobs


def _unaligned(p, problem: Problem):
    if problem.n % 8 == 0 and problem.k % 8 == 0:
        return (f"sm90_padded is for N or K not a multiple of 8; {problem.name} is aligned "
                "(use sm90_cutlass, which is this kernel without the copies)")
    return None


C_ALIGN = ParamSpec("c_align", (8, 4, 2, 1),
                    doc="8: write a C of pitch N rounded up to 8, then copy it out (when N % 8 != 0); "
                        "1, 2, 4: store C directly, that many elements at a time (nosmem epilogue)")


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
    base = _sm90.make_space()
    return replace(base, family=FAMILY, params=(*base.params, C_ALIGN),
                   rules=(*base.rules, Rule("direct-c-nosmem", "c_align < 8 only with the nosmem epilogue",
                                            _direct_needs_nosmem, _fix_direct)),
                   shape_rules=(ShapeRule("unaligned", "N or K not a multiple of 8", _unaligned),
                                ShapeRule("c-alignment", "N a multiple of c_align when C is stored directly",
                                          _c_alignment)),
                   description="sm90_cutlass with aligned copies of unaligned operands inside the timed call "
                               "(any N and K)")
