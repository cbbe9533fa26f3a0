"""The built-in `sm90_swapab_splitk` family: sm90_splitk's kernel (K split into a batch of fp32 partial sums
and a reduction launch) on the transposed problem C^T = W A^T, as sm90_swapab runs sm90_cutlass's (its
template extends sm90_splitk's)."""

from pathlib import Path

from genome import sm90_swapab_splitk_space

from ..sm90_splitk import FAMILY as SPLITK

FAMILY = SPLITK.extended_by(
    sm90_swapab_splitk_space.FAMILY, sm90_swapab_splitk_space.make_space, Path(__file__).resolve().parent,
    simulator_model="evaluator.sim_swapab_splitk:model", knobs=sm90_swapab_splitk_space.knobs,
    template_globals={"transposed": True},   # the `arguments` blocks hand the kernel (N, M, K)
    description="sm90_splitk on the transposed problem C^T = W A^T: K split into a batch of fp32 partial sums "
                "added by a reduction launch, tile_m/cluster_m along N, tile_n/cluster_n along M")
