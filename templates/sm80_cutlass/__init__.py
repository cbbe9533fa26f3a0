"""The built-in `sm80_cutlass` family: CUTLASS 2.x GemmUniversal (mma.sync + cp.async multistage) on
Hopper: small tiles and a short prologue for tiny problems, alignments 1-8 for any N and K, parallel
split-K for small M*N with long K."""

from pathlib import Path

from genome import sm80_cutlass_space

from ..family import TemplateFamily
from ..sm90_cutlass import FAMILY as SM90

HERE = Path(__file__).resolve().parent

FAMILY = TemplateFamily(
    name=sm80_cutlass_space.FAMILY,
    make_space=sm80_cutlass_space.make_space,
    template_dir=HERE,
    knobs=sm80_cutlass_space.knobs,
    arch="90a",                      # sm80 instructions, built for the Hopper it runs on
    nvcc_flags=SM90.nvcc_flags,
    min_compute_capability=(9, 0),
    simulator_model="evaluator.sim_sm80:model",
    seeds_dir=HERE / "seeds",
    description="CUTLASS 2.x GemmUniversal on sm_90: mma.sync, cp.async multistage, parallel split-K (fp32 partials), "
                "alignments 1-8",
)
