"""The built-in `sm90_padded` family: the sm90_cutlass kernel for any N and K, through aligned
copies of the unaligned operands inside the timed call (its template extends sm90_cutlass's)."""

from pathlib import Path

from genome import sm90_padded_space

from ..sm90_cutlass import FAMILY as SM90

FAMILY = SM90.extended_by(
    sm90_padded_space.FAMILY, sm90_padded_space.make_space, Path(__file__).resolve().parent,
    simulator_model="evaluator.sim_padded:model", knobs=sm90_padded_space.knobs,
    description="sm90_cutlass for unaligned N or K: aligned copies of the unaligned operands "
                "(one pre-pass, one post-pass launch) inside the timed call")
