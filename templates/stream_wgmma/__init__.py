"""The built-in `stream_wgmma` family: a weight-streaming wgmma kernel for GEMMs with a small side (min(M, N) <=
256) whose large operand comes through TMA boxes into a shared-memory ring. See kernel.cu.j2 for how it works."""

from pathlib import Path

from genome import stream_wgmma_space

from ..family import COMMON_NVCC_FLAGS, TemplateFamily

HERE = Path(__file__).resolve().parent

FAMILY = TemplateFamily(
    name=stream_wgmma_space.FAMILY,
    make_space=stream_wgmma_space.make_space,
    template_dir=HERE,
    knobs=stream_wgmma_space.knobs,
    arch="90a",
    nvcc_flags=COMMON_NVCC_FLAGS,
    min_compute_capability=(9, 0),
    simulator_model="evaluator.sim_stream_wgmma:model",
    seeds_dir=HERE / "seeds",
    description="TMA-fed weight-streaming wgmma kernel for GEMMs with a small side (min(M, N) <= 256): the large "
                "operand read once from HBM in runs of 128 x pieces bytes a row through a shared-memory ring",
)
