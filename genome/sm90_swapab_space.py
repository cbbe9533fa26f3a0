"""The search space of the `sm90_swapab` family: sm90_cutlass's kernel run on the transposed problem.

A row-major C[M,N] = A[M,K] W[N,K]^T is the column-major C^T[N,M] = W[N,K] A[M,K]^T, which is the
problem cuBLAS is given for every row-major call. The kernel computes that one: W is the WGMMA's
A operand and A its B operand, and C is written column-major. So the tile parameters are read in
that frame: `tile_m` runs along N (the 64-row WGMMA steps walk N), `tile_n` along M, `cluster_m`
and `cluster_n` likewise, and the cooperative schedule's two consumer warpgroups split N. The same
footprint on C as an sm90_cutlass tile then has another warpgroup split, another operand multicast
and another epilogue store order (the vendor's kernels at 2048^3 and 4096x1024x1024 are of this
kind: 256x128 in this frame, warpgroups split along N).

Parameters and rules are sm90_cutlass's (none of them depends on which of M and N the tile walks;
the alignment rule is the same too, K and N multiples of 8), with sm90_lean's schedule "ws" (one
consumer warpgroup, one CTA per tile) as a third schedule, as in sm90_padded. One rule is looser: with
the warpgroups split along N (wg_split n) any tile N splits, because C^T is column-major and the
epilogue subtile's swizzle atoms run along the kernel's M.
"""

from __future__ import annotations

from dataclasses import replace

from . import sm90_cutlass_space as _sm90
from .sm90_lean_space import WS_PERSISTENT, WS_SCHEDULE
from .space import SearchSpace

FAMILY = "sm90_swapab"
knobs = _sm90.knobs


def make_space() -> SearchSpace:
    base = _sm90.make_space()
    return replace(base, family=FAMILY, params=_sm90.derived_params(base.params, fixed=_sm90.AUTO_EPILOGUE_TILE,
                                                                               replaced=(WS_SCHEDULE,)),
                   rules=(*(_sm90.WG_SPLIT_N_COLUMN_MAJOR_C if r.name == "wg-split-n" else r for r in base.rules),
                          WS_PERSISTENT), tile_axes=("n", "m"),
                   description="sm90_cutlass on the transposed problem C^T = W A^T (as cuBLAS runs a "
                               "row-major call): tile_m and cluster_m run along N, tile_n and cluster_n "
                               "along M")
