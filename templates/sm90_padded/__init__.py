"""The built-in `sm90_padded` family: the sm90_cutlass kernel for any N and K, through aligned
copies of the unaligned operands inside the timed call (its template extends sm90_cutlass's)."""

from pathlib import Path

from genome import sm90_padded_space

from ..family import TemplateFamily
from ..sm90_cutlass import FAMILY as SM90

HERE = Path(__file__).resolve().parent

FAMILY = TemplateFamily(
    name=sm90_padded_space.FAMILY,
    make_space=sm90_padded_space.make_space,
    template_dir=HERE,
    template_search_path=(HERE.parent,),
    knobs=sm90_padded_space.knobs,
    arch=SM90.arch,
    nvcc_flags=SM90.nvcc_flags,
    min_compute_capability=SM90.min_compute_capability,
    simulator_model="evaluator.sim_padded:model",
    seeds_dir=HERE / "seeds",
    description="sm90_cutlass for unaligned N or K: aligned copies of the unaligned operands "
                "(one pre-pass, one post-pass launch) inside the timed call",
)
