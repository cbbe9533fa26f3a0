"""The built-in `sm90_splitk` family: sm90_cutlass (TMA + WGMMA) with K split into a batch of fp32
partial sums and a reduction launch, for few output tiles and a long K (its template extends
sm90_cutlass's)."""

from pathlib import Path

from genome import sm90_splitk_space

from ..sm90_cutlass import FAMILY as SM90

FAMILY = SM90.extended_by(
    sm90_splitk_space.FAMILY, sm90_splitk_space.make_space, Path(__file__).resolve().parent,
    simulator_model="evaluator.sim_splitk:model", knobs=sm90_splitk_space.knobs,
    description="sm90_cutlass with K split into a batch of fp32 partial sums and a reduction launch, or their "
                "sum in the GEMM's epilogue",
    # the in-kernel epilogue (its count-in and wait) outside every block, so that no code patch drops the wait
    template_globals={"family_prelude": "sm90_splitk/inkernel_epilogue.j2"})
