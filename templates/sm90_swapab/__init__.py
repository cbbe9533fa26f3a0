"""The built-in `sm90_swapab` family: sm90_cutlass's kernel on the transposed problem C^T = W A^T
(its template extends sm90_cutlass's)."""

from pathlib import Path

from genome import sm90_swapab_space

from ..sm90_cutlass import FAMILY as SM90

FAMILY = SM90.extended_by(
    sm90_swapab_space.FAMILY, sm90_swapab_space.make_space, Path(__file__).resolve().parent,
    simulator_model="evaluator.sim_swapab:model", knobs=sm90_swapab_space.knobs,
    template_globals={"transposed": True},   # sm90_cutlass's `arguments` block hands the kernel (N, M, K)
    description="sm90_cutlass on the transposed problem C^T = W A^T, as cuBLAS runs a row-major call: "
                "tile_m/cluster_m along N, tile_n/cluster_n along M")
