"""The built-in `skinny_mma` family: a hand-written streaming mma.sync kernel for skinny GEMMs
(decode, GEMV, small M*N with long K). See kernel.cu.j2 for how it works."""

from pathlib import Path

from genome import skinny_mma_space

from ..family import COMMON_NVCC_FLAGS, TemplateFamily

HERE = Path(__file__).resolve().parent

FAMILY = TemplateFamily(
    name=skinny_mma_space.FAMILY,
    make_space=skinny_mma_space.make_space,
    template_dir=HERE,
    knobs=skinny_mma_space.knobs,
    arch="90a",
    nvcc_flags=COMMON_NVCC_FLAGS,
    min_compute_capability=(9, 0),
    simulator_model="evaluator.sim_skinny:model",
    seeds_dir=HERE / "seeds",
    description="streaming mma.sync kernel for skinny GEMMs: one operand read once from HBM, "
                "K split over warps and cluster CTAs (distributed shared memory reduction)",
    template_globals={"any_k_plan": skinny_mma_space.any_k_plan},   # the any-K kernel's unroll and buffering
)
