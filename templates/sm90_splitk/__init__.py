"""The built-in `sm90_splitk` family: sm90_cutlass (TMA + WGMMA) with K split into a batch of fp32
partial sums and a reduction launch, for few output tiles and a long K (its template extends
sm90_cutlass's)."""

from pathlib import Path

from genome import sm90_splitk_space

from ..family import TemplateFamily
from ..sm90_cutlass import FAMILY as SM90

HERE = Path(__file__).resolve().parent

FAMILY = TemplateFamily(
    name=sm90_splitk_space.FAMILY,
    make_space=sm90_splitk_space.make_space,
    template_dir=HERE,
    template_search_path=(HERE.parent,),
    knobs=sm90_splitk_space.knobs,
    arch=SM90.arch,
    nvcc_flags=SM90.nvcc_flags,
    min_compute_capability=SM90.min_compute_capability,
    simulator_model="evaluator.sim_splitk:model",
    seeds_dir=HERE / "seeds",
    description="sm90_cutlass with K split into a batch of fp32 partial sums and a reduction launch",
)
