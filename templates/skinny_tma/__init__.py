"""The built-in `skinny_tma` family: a streaming mma.sync kernel for skinny GEMMs (M or N <= 16) whose
streamed operand comes through TMA boxes into a shared-memory ring. See kernel.cu.j2 for how it works."""

from pathlib import Path

from genome import skinny_tma_space

from ..family import COMMON_NVCC_FLAGS, TemplateFamily

HERE = Path(__file__).resolve().parent

FAMILY = TemplateFamily(
    name=skinny_tma_space.FAMILY,
    make_space=skinny_tma_space.make_space,
    template_dir=HERE,
    knobs=skinny_tma_space.knobs,
    arch="90a",
    nvcc_flags=COMMON_NVCC_FLAGS,
    min_compute_capability=(9, 0),
    simulator_model="evaluator.sim_skinny_tma:model",
    seeds_dir=HERE / "seeds",
    description="TMA-fed streaming mma.sync kernel for skinny GEMMs (min(M, N) <= 16): the large operand read "
                "once from HBM in runs of 128 x pieces bytes a row through a shared-memory ring",
)
