"""The search space of the `sm90_padded` family: sm90_cutlass for unaligned N or K.

The kernel is sm90_cutlass's, with the same parameters and rules; the family adds an aligned
copy of whatever operand is unaligned inside the timed call (see templates/sm90_padded). It takes
only problems whose N or K is not a multiple of 8: on aligned problems it is sm90_cutlass.
"""

from __future__ import annotations

from dataclasses import replace

from . import sm90_cutlass_space as _sm90
from .problem import Problem
from .space import SearchSpace, ShapeRule

FAMILY = "sm90_padded"
knobs = _sm90.knobs


def _unaligned(p, problem: Problem):
    if problem.n % 8 == 0 and problem.k % 8 == 0:
        return (f"sm90_padded is for N or K not a multiple of 8; {problem.name} is aligned "
                "(use sm90_cutlass, which is this kernel without the copies)")
    return None


def make_space() -> SearchSpace:
    return replace(_sm90.make_space(), family=FAMILY,
                   shape_rules=(ShapeRule("unaligned", "N or K not a multiple of 8", _unaligned),),
                   description="sm90_cutlass with aligned copies of unaligned operands inside the timed call "
                               "(any N and K)")
