"""The search spaces a campaign searches: each family's as the campaign was created.

A campaign records the space revision it was created at (`genome.SPACE_REVISION`, meta key
`space_revision`); a parameter added to a family since stays pinned to its default in it
(`SearchSpace.as_of`), so its random draws, and its resume by replay, are those of the older code.
"""

from __future__ import annotations

from typing import Any, Iterable

from genome import SPACE_REVISION, SearchSpace

from .db import CampaignDB

META_KEY = "space_revision"


def creation_record() -> dict[str, int]:
    """What a new campaign records of its spaces (into its meta)."""
    return {META_KEY: SPACE_REVISION}


def recorded_revision(db: CampaignDB, families: Iterable[Any]) -> int:
    """The space revision a campaign was created at. One that recorded none was created before revisions
    were recorded, at 0, unless its genomes name a parameter of a later revision (created by the commits
    that added sm90_splitk's pdl and reduce, before the record): then that one."""
    recorded = db.get_meta(META_KEY)
    if recorded is not None:
        return int(recorded)
    named = db.named_params()
    return max((p.revision for f in families for p in f.space.params if p.name in named.get(f.name, ())),
               default=0)


def campaign_spaces(db: CampaignDB, families: Iterable[Any]) -> list[SearchSpace]:
    """Each family's space (in order) as the campaign was created: parameters added since pinned."""
    families = list(families)
    revision = recorded_revision(db, families)
    return [f.space.as_of(revision) for f in families]
