"""The search spaces a campaign searches, and the simulated device that orders its seeds: each as the
campaign was created.

A campaign records the space revision it was created at (`genome.SPACE_REVISION`, meta key
`space_revision`); a parameter added to a family since stays pinned to its default in it
(`SearchSpace.as_of`), so its random draws, and its resume by replay, are those of the older code. It
records the seed model's revision the same way (`seed_model_revision`, `seed_model_device`), and the revision of
its vendor mirrors (`vendor_mirrors_revision`: evolution/vendor_seeds.py).
"""

from __future__ import annotations

from typing import Any, Iterable

from genome import SPACE_REVISION, SearchSpace

from .db import CampaignDB

META_KEY = "space_revision"


# The revision of the simulator model that orders, fits and prunes a campaign's seeds (seeding.model_order):
# 1: the H200's measured cluster capacity (session 27). A campaign that recorded none orders its seeds
# with the layout of before (sim_device.LEGACY_GPC_SMS), as it did when it ran, so its resume replays.
# 2: skinny_mma's CTA generations (a CTA's chain of load rounds and reductions, once per wave of CTAs; session
# 35). A campaign of an earlier revision prices skinny_mma as before (DeviceSpec.model_revision).
# 3: the grids CUTLASS launches (session 40): a persistent kernel gets the clusters CUTLASS's scheduler assumes
# fit (29 of 4 and 14 of 8 on the H200, which runs 30 and 15), and sm90_lean's grid of one CTA per tile is
# padded to whole clusters only, not to the swizzle, and starts in the hardware's order whatever its raster knob
# (sim_sm90.persistent_ctas).
# 4: skinny_mma's any-K kernel priced with a factor fitted to measured any-K / aligned time ratios (session 43,
# sim_skinny.ANY_K_BODY_FACTOR, on an H100).
# 5: that factor fitted on the H200 after the any-K kernel's plain loads (session 44, ANY_K_BODY_FACTOR_H200).
# 6: a one-CTA-a-tile (ws) kernel with an explicit stage count runs two or more CTAs an SM where its grid holds more
# CTAs than the SMs, sharing the SM's pipes (session 54, sim_sm90.co_resident_ctas).
SEED_MODEL_KEY = "seed_model_revision"
SEED_MODEL_REVISION = 6

# What a campaign's vendor mirrors (population.vendor_seeds) are. A campaign that recorded none was created at 1.
# 1: session 48's mirrors (evolution/vendor_seeds.py).
# 2: a tile the family holds only with the cooperative schedule split along N (tile M 192, 320, 448: the vendor's
# 320x128 at 8192^3) is mirrored so instead of dropped (not yet timed); a mirror with a cluster and a wave or more
# of work tiles is followed by its twin without the cluster (session 49, measured: docs/results/mirror-bases).
VENDOR_MIRRORS_KEY = "vendor_mirrors_revision"
VENDOR_MIRRORS_REVISION = 2


def creation_record() -> dict[str, int]:
    """What a new campaign records of its spaces and of the model that orders its seeds (into its meta)."""
    return {META_KEY: SPACE_REVISION, SEED_MODEL_KEY: SEED_MODEL_REVISION, VENDOR_MIRRORS_KEY: VENDOR_MIRRORS_REVISION}


def vendor_mirrors_revision(db: CampaignDB) -> int:
    """The revision of the vendor mirrors the campaign was created with (1 where it recorded none)."""
    return int(db.get_meta(VENDOR_MIRRORS_KEY) or 1)


def seed_model_device(db: CampaignDB) -> Any:
    """The simulated H200 that orders, fits and prunes the campaign's seeds: the one of its revision."""
    from dataclasses import replace
    from evaluator.sim_device import LEGACY_GPC_SMS, get_device
    device = get_device("h200")
    revision = int(db.get_meta(SEED_MODEL_KEY) or 0)
    if revision >= SEED_MODEL_REVISION:
        return device
    device = replace(device, model_revision=revision)
    return device if revision >= 1 else replace(device, gpc_sms=LEGACY_GPC_SMS)


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
