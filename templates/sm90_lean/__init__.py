"""The built-in `sm90_lean` family: sm90_cutlass's TMA + WGMMA tiles with the plain warp-specialised,
non-persistent schedule, for tiny problems (its template extends sm90_cutlass's)."""

from pathlib import Path

from genome import sm90_lean_space

from ..sm90_cutlass import FAMILY as SM90

FAMILY = SM90.extended_by(
    sm90_lean_space.FAMILY, sm90_lean_space.make_space, Path(__file__).resolve().parent,
    simulator_model="evaluator.sim_lean:model", knobs=sm90_lean_space.knobs,
    description="sm90_cutlass tiles, plain warp-specialised schedule: one consumer warpgroup, one CTA per "
                "tile, not persistent (tiny problems)")
