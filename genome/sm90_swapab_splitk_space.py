"""The search space of the `sm90_swapab_splitk` family: sm90_splitk's kernel on the transposed problem.

sm90_splitk splits K into a batch of fp32 partial sums that a second launch adds up; sm90_swapab runs the
sm90_cutlass kernel on C^T[N,M] = W[N,K] A[M,K]^T, so that W is the WGMMA's A operand and the tile's 64-row
steps walk N. This family is both: at a decode shape (M <= 16, long K) a swapped tile of 64 x 16 covers C in
N / 64 tiles, fewer than the SMs (64 at N = 4096), and a K split of 2 puts W's stream on twice as many CTAs.
cuBLAS runs such kernels there (its pick at 16x4096x14336 on the H200 is a 128x16 tile, split-K 4 in a 2x1
cluster; at 128x4096x14336 a 128x64 tile, split-K 2).

Parameters and rules are sm90_splitk's, read in the transposed frame as sm90_swapab reads them (`tile_m` and
`cluster_m` run along N, `tile_n` and `cluster_n` along M), with sm90_swapab's third schedule "ws" (one consumer
warpgroup, one CTA per tile). The partial sums are added by the reduction launch only: the in-kernel fix-up's
epilogue stores C row by row in the kernel's frame, which is not C's layout here, so `fixup` is pinned to launch,
and sm90_splitk's shape rule for it (`inkernel-resident`, which counts tiles in the untransposed frame) is left out.
"""

from __future__ import annotations

from dataclasses import replace

from . import sm90_cutlass_space as _sm90
from . import sm90_splitk_space as _splitk
from .sm90_lean_space import WS_PERSISTENT, WS_SCHEDULE
from .space import SearchSpace

FAMILY = "sm90_swapab_splitk"
knobs = _splitk.knobs


def make_space() -> SearchSpace:
    base = _splitk.make_space()
    params = _sm90.derived_params(base.params, fixed={"fixup": ("launch",)}, replaced=(WS_SCHEDULE,))
    shape_rules = tuple(r for r in base.shape_rules if r.name != "inkernel-resident")
    return replace(base, family=FAMILY, params=params, rules=(*base.rules, WS_PERSISTENT), tile_axes=("n", "m"),
                   shape_rules=shape_rules,
                   description="sm90_splitk on the transposed problem C^T = W A^T: K split into a batch of fp32 "
                               "partial sums and a reduction launch, tile_m/cluster_m along N, tile_n/cluster_n "
                               "along M (decode shapes whose N gives fewer swapped tiles than SMs)")
