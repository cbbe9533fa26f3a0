"""A parameter of a search space: its choices, whether it is fixed at compile time or passed at run time,
and the space revision that added it or some of its choices (so a campaign keeps the space it was created with)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

# The revision of the built-in spaces. A parameter added to a family after a campaign was created has a
# higher `revision` than the one the campaign recorded; the campaign searches with it pinned to its
# default (SearchSpace.as_of), so its random draws, and its resume by replay, stay as they were.
# 1: sm90_splitk's pdl and reduce (session 26). Campaigns that recorded none are at revision 0.
# 2: sm90_cutlass's and sm90_swapab's wg_split (the cooperative warpgroups side by side along N) and the tile
#    M choices 192, 320 and 448 it allows (session 32).
# 3: skinny_mma's k_interleave (the K splits take groups of k in turn) and l2_prefetch (session 35).
# 4: the TMA families' multicast slices of 4-row multiples, not only whole 8-row swizzle atoms (a rule's version,
#    `Rule.since` / `Rule.before`), and clusters of 8 CTAs along M or N (session 36).
# 5: the persistent TMA families' cluster_grid (the clusters a persistent kernel launches: CUTLASS's estimate or the
#    occupancy API's count; session 40).
# 6: sm90_splitk's fixup (inkernel: the splits of a tile add their partial sums in the GEMM's epilogue; session 41).
# 7: skinny_mma runs any K, not only multiples of 8 (a shape rule's version, `ShapeRule.since`; session 42).
# 8: skinny_tma's y_resident (the small operand's whole K kept in shared memory; session 56).
# 9: stream_wgmma's cluster_k (a cluster of CTAs splits a work unit's K and adds its sums in distributed shared
#    memory; session 61).
SPACE_REVISION = 9


@dataclass(frozen=True)
class ParamSpec:
    name: str
    choices: tuple[Any, ...]
    kind: str = "compile"  # "compile": changes the source; "runtime": passed through the C ABI knobs
    doc: str = ""
    ordered: bool = True  # neighbours are adjacent values (numbers) rather than any other value
    # implicit: a genome at this parameter's first choice (its default) does not name it, so a parameter
    # added to a family later leaves the ids, the rendered source and the builds of its older genomes as
    # they were (halls of fame, seeds, `seed_from` campaigns stay valid)
    implicit: bool = False
    # the space revision that added it (SPACE_REVISION): a campaign created at an earlier one searches
    # with it pinned to its default. Only implicit parameters can be added later.
    revision: int = 0
    # choices added to the parameter after its first revision, as (choice, revision): a campaign created at
    # an earlier revision searches without them (as_of)
    added: tuple[tuple[Any, int], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("compile", "runtime"):
            raise ValueError(f"parameter kind must be 'compile' or 'runtime', got {self.kind!r}")
        if not self.choices:
            raise ValueError(f"parameter {self.name} has no choices")
        if self.revision and not self.implicit:
            raise ValueError(f"parameter {self.name}: one added in a later revision must be implicit")
        for choice, revision in self.added:
            if choice not in self.choices[1:] or revision < 1:
                raise ValueError(f"parameter {self.name}: an added choice must be one of its choices other than "
                                 f"the first (its default), added at a revision >= 1; got {choice!r} at {revision}")

    def as_of(self, revision: int) -> "ParamSpec":
        """This parameter as a space at `revision` has it: pinned to its default when it was added later,
        without the choices added later."""
        if self.revision > revision:
            return replace(self, choices=self.choices[:1], added=())
        later = {choice for choice, rev in self.added if rev > revision}
        if not later:
            return self
        return replace(self, choices=tuple(c for c in self.choices if c not in later),
                       added=tuple((c, r) for c, r in self.added if r <= revision))
