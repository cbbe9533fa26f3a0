"""The built-in `sm90_cpasync` family: sm90_cutlass's WGMMA tiles with A and W loaded by cp.async
instead of TMA, for rows of any pitch and any even K (its template extends sm90_cutlass's)."""

from pathlib import Path

from genome import sm90_cpasync_space

from ..sm90_cutlass import FAMILY as SM90

FAMILY = SM90.extended_by(
    sm90_cpasync_space.FAMILY, sm90_cpasync_space.make_space, Path(__file__).resolve().parent,
    simulator_model="evaluator.sim_cpasync:model", knobs=sm90_cpasync_space.knobs,
    description="sm90_cutlass tiles fed by cp.async instead of TMA: rows of any pitch, even K, any N with "
                "direct C stores; no clusters")
