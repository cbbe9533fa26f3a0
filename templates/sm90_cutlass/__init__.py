"""The built-in `sm90_cutlass` family: CUTLASS 3.x CollectiveBuilder GEMM for sm_90a (TMA + WGMMA)."""

from pathlib import Path

from genome import sm90_cutlass_space

from ..family import TemplateFamily

HERE = Path(__file__).resolve().parent

FAMILY = TemplateFamily(
    name=sm90_cutlass_space.FAMILY,
    make_space=sm90_cutlass_space.make_space,
    template_dir=HERE,
    knobs=sm90_cutlass_space.knobs,
    arch="90a",
    nvcc_flags=("-O3", "-DNDEBUG", "-std=c++17", "--expt-relaxed-constexpr", "-Xcompiler=-fPIC", "-shared",
                "-Xptxas=-v", "-lineinfo"),
    min_compute_capability=(9, 0),
    simulator_model="evaluator.sim_sm90:model",
    seeds_dir=HERE / "seeds",
    description="CUTLASS 3.x CollectiveBuilder GEMM for sm_90a (TMA + WGMMA, warp-specialised)",
    template_globals={"gmma_base_n": sm90_cutlass_space.GMMA_BASE_N},
)
