"""population.vendor_seeds: genomes that mirror the CTA tile, cluster and split-K of the algorithm cuBLASLt ran at
the shape (its baselines' `algorithms`), on top of a shape's first-round seeds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine_helpers import FakeEvaluator, small_config
from evaluator.cublaslt_enums import TILES
from evolution.seeding import load_handpicked
from evolution.campaign_spaces import VENDOR_MIRRORS_KEY, VENDOR_MIRRORS_REVISION, vendor_mirrors_revision
from evolution.db import CampaignDB
from evolution.vendor_seeds import (VENDOR_ORIGIN, VendorPick, grid_ctas, mirror, tile_error, unclustered_twin,
                                    vendor_picks, vendor_seeds, wgmma_axis_mismatch)
from experiments.campaign import create_campaign, run_campaign
from experiments.progress import SilentProgress
from experiments.schema import parse_campaign
from genome import Problem
from templates import get_space

FAMILIES = ("sm90_cutlass", "sm90_lean", "sm90_swapab", "sm90_splitk")
SPACES = [get_space(f) for f in FAMILIES]
HANDPICKED = load_handpicked(FAMILIES)
# cuBLASLt's ids (cublasLt.h): tiles by name (tile_id), cluster shapes 2x1x1 = 3, 1x2x1 = 5, 2x4x1 = 9
CUBE = Problem.parse("1000x1000x1000")


def tile_id(name: str) -> int:
    return TILES.index(name)


def config(tile: str, cluster_id: int = 2, splitk: int = 1, stages_id: int = 35) -> dict:
    return {"algo_id": 66, "tile_id": tile_id(tile), "splitk": splitk, "stages_id": stages_id,
            "cluster_shape_id": cluster_id}


def test_a_pick_reads_the_tile_and_cluster_as_n_by_m_of_the_problem():
    pick = VendorPick.read("cublaslt_autotuned", config("72x128", cluster_id=9))   # cluster 2x4x1
    assert (pick.along_n, pick.along_m, pick.cluster_n, pick.cluster_m) == (72, 128, 2, 4)
    assert (pick.splitk, pick.tile_k, pick.stages) == (1, 64, 0)                    # stages 64xAUTO
    assert pick.what == "tile 72x128, stages 64xAUTO, split-K 1, cluster 2x4x1"
    assert VendorPick.read("x", {"tile_id": 16, "stages_id": 16}).stages == 4       # 64x4
    assert VendorPick.read("x", {"tile_id": 15}).cluster_m == 1                     # no cluster id: auto, none
    for bad in ({"tile_id": 0}, {"tile_id": 99999}, {}, {"tile_id": 15, "cluster_shape_id": 77}):
        assert VendorPick.read("x", bad) is None          # ... and a cluster id past the table: no pick, not 1x1


def test_picks_come_fastest_baseline_first_each_once():
    algos = {"slow": config("64x128"), "fast": config("72x128", 9), "twin": config("72x128", 9),
             "untimed": config("128x128")}
    picks = vendor_picks(algos, {"slow": 9.0, "fast": 7.0, "twin": 7.5})
    assert [p.baseline for p in picks] == ["fast", "slow", "untimed"]


def test_a_mirror_keeps_the_vendors_tile_cluster_and_k_depth_in_the_family_that_holds_them():
    pick = VendorPick.read("v", config("72x128", cluster_id=9))
    g = mirror(pick, get_space("sm90_cutlass"), CUBE, HANDPICKED)
    assert (g.get("tile_m"), g.get("tile_n"), g.get("cluster_m"), g.get("cluster_n")) == (128, 80, 4, 2)
    assert g.get("tile_k") == 64 and g.get("stages") == 0 and g.get("scheduler") == "persistent"
    assert get_space("sm90_cutlass").is_valid(g, CUBE)
    # no 96-row tile along M in sm90_cutlass (its tile M: 64, 128, ...): the swapped family takes 256x96 (N x M)
    wide = VendorPick.read("v", config("256x96", cluster_id=5))                   # cluster 1x2x1
    shape = Problem.parse("3072x1024x2048")
    assert mirror(wide, get_space("sm90_cutlass"), shape, HANDPICKED) is None
    swapped = mirror(wide, get_space("sm90_swapab"), shape, HANDPICKED)
    assert (swapped.get("tile_m"), swapped.get("tile_n"), swapped.get("cluster_m"), swapped.get("cluster_n")) == \
        (256, 96, 1, 2)
    # a family without the vendor's cluster takes no mirror of it
    assert mirror(pick, get_space("sm90_cpasync"), CUBE, load_handpicked(["sm90_cpasync"])) is None
    # the nearest tile first: 320 x 128 (N x M) is sm90_swapab's 320-row tile, sm90_cutlass only comes within 20%
    big = VendorPick.read("v", config("320x128", cluster_id=5))
    assert tile_error(big, get_space("sm90_swapab")) == 0 < tile_error(big, get_space("sm90_cutlass")) <= 0.25
    # 128x72 (N x M): both families come within 11%, the swapped one holds the vendor's wgmma M (128, along N)
    odd = VendorPick.read("v", config("128x72", cluster_id=7))                  # cluster 4x2x1
    assert tile_error(odd, get_space("sm90_swapab")) == tile_error(odd, get_space("sm90_cutlass"))
    assert wgmma_axis_mismatch(odd, get_space("sm90_cutlass"))
    assert not wgmma_axis_mismatch(odd, get_space("sm90_swapab"))
    first = vendor_seeds(CUBE, SPACES, {"a": config("128x72", 7)}, {"a": 7.5}, HANDPICKED, 1, set())[0][0]
    assert (first.family, first.get("tile_m"), first.get("tile_n"), first.get("cluster_m"), first.get("cluster_n")) \
        == ("sm90_swapab", 128, 80, 4, 2)


def test_with_a_price_the_rest_of_a_mirror_comes_from_the_base_it_prices_fastest():
    pick = VendorPick.read("v", config("112x128", cluster_id=7))                 # cluster 4x2x1
    shape, space = Problem.parse("1280x1280x1280"), get_space("sm90_cutlass")
    nearest = mirror(pick, space, shape, HANDPICKED)
    schedules = {}
    for schedule in ("pingpong", "cooperative"):
        priced = mirror(pick, space, shape, HANDPICKED,
                        price=lambda g, s=schedule: 0.0 if g.get("schedule") == s else 1.0)
        assert priced.get("schedule") == schedule and space.is_valid(priced, shape)
        assert (priced.get("tile_m"), priced.get("tile_n"), priced.get("cluster_m"), priced.get("cluster_n")) == \
            (128, 112, 2, 4)
        schedules[schedule] = priced.id
    assert nearest.id in schedules.values() and len(set(schedules.values())) == 2
    # a flat price keeps the nearest base, as no price does
    assert mirror(pick, space, shape, HANDPICKED, price=lambda g: 1.0).id == nearest.id


def test_split_k_mirrors_as_the_familys_own_split():
    pick = VendorPick.read("v", config("64x128", cluster_id=3, splitk=4))      # cluster 2x1x1
    shape = Problem.parse("512x512x16384")
    cut = mirror(pick, get_space("sm90_cutlass"), shape, HANDPICKED)
    assert (cut.get("decomposition"), cut.get("scheduler"), cut.get("splits")) == ("split_k", "streamk", 4)
    assert mirror(pick, get_space("sm90_splitk"), shape, HANDPICKED).get("ksplit") == 4
    assert mirror(pick, get_space("sm90_lean"), shape, HANDPICKED) is None            # it cannot split K
    unsplit = VendorPick.read("v", config("64x128", cluster_id=3))
    assert mirror(unsplit, get_space("sm90_splitk"), shape, HANDPICKED) is None       # it always splits K
    # a split the family does not have is no mirror of it (sm90_cutlass has no 5; sm90_splitk has)
    five = VendorPick.read("v", config("64x128", cluster_id=3, splitk=5))
    assert mirror(five, get_space("sm90_cutlass"), Problem.parse("512x512x15360"), HANDPICKED) is None
    assert mirror(five, get_space("sm90_splitk"), Problem.parse("512x512x15360"), HANDPICKED).get("ksplit") == 5


def test_a_swapped_split_k_pick_mirrors_in_sm90_swapab_splitk():
    """cuBLASLt's pick at 16x4096x14336 on the H200: tile 128x16 (N x M: 128 along N, the wgmma M), split-K 4,
    cluster 2x1x1 (2 along N). The swapped split-K family holds it as a batch of K slices and a reduction launch;
    sm90_swapab as CUTLASS's stream-K scheduler's split-K; sm90_splitk not (its tile M, along M, starts at 64)."""
    pick = VendorPick.read("v", config("128x16", cluster_id=3, splitk=4))
    shape = Problem.parse("16x4096x14336")
    space = get_space("sm90_swapab_splitk")
    g = mirror(pick, space, shape, load_handpicked(("sm90_swapab_splitk",)))
    assert (g.get("tile_m"), g.get("tile_n"), g.get("cluster_m"), g.get("cluster_n"), g.get("ksplit")) == \
        (128, 16, 2, 1, 4)
    assert space.is_valid(g, shape)
    streamk = mirror(pick, get_space("sm90_swapab"), shape, HANDPICKED)
    assert (streamk.get("tile_m"), streamk.get("splits"), streamk.get("decomposition")) == (128, 4, "split_k")
    assert mirror(pick, get_space("sm90_splitk"), shape, HANDPICKED) is None


def test_vendor_seeds_count_and_skip_what_is_taken():
    algos = {"cublaslt_autotuned": config("72x128", 9), "cublaslt_heuristic": config("64x128", 3)}
    times = {"cublaslt_autotuned": 7.3, "cublaslt_heuristic": 7.4}
    seeds = vendor_seeds(CUBE, SPACES, algos, times, HANDPICKED, 3, set())
    assert len(seeds) == 3 and all(origin == VENDOR_ORIGIN for _, origin, _ in seeds)
    assert [g.family for g, _, _ in seeds] == ["sm90_cutlass", "sm90_lean", "sm90_swapab"]
    assert "mirrors cublaslt_autotuned's algorithm (tile 72x128" in seeds[0][2]
    again = vendor_seeds(CUBE, SPACES, algos, times, HANDPICKED, 3, {seeds[0][0].id})
    assert seeds[0][0].id not in {g.id for g, _, _ in again} and len(again) == 3
    assert vendor_seeds(CUBE, SPACES, {}, {}, HANDPICKED, 3, set()) == []
    assert vendor_seeds(CUBE, SPACES, algos, times, HANDPICKED, 0, set()) == []


def test_a_tile_held_only_with_the_cooperative_split_along_n_is_mirrored_so_since_revision_2():
    """The vendor's 320x128 (N x M) at 8192^3 is sm90_swapab's tile M 320, which its rules allow only with the
    cooperative schedule split along N: revision 1's repair shrank it, so sm90_cutlass's 128x256 (20% off) came
    first; revision 2 mirrors the exact tile."""
    big = VendorPick.read("v", config("320x128", cluster_id=5))                  # cluster 1x2x1
    shape, swapab = Problem.parse("8192x8192x8192"), get_space("sm90_swapab")
    assert mirror(big, swapab, shape, HANDPICKED, revision=1) is None
    wide = mirror(big, swapab, shape, HANDPICKED)
    assert (wide.get("tile_m"), wide.get("tile_n"), wide.get("cluster_m"), wide.get("cluster_n")) == (320, 128, 1, 2)
    assert (wide.get("schedule"), wide.get("wg_split")) == ("cooperative", "n") and swapab.is_valid(wide, shape)
    algos, times = {"a": config("320x128", 5)}, {"a": 1600.0}
    old = vendor_seeds(shape, SPACES, algos, times, HANDPICKED, 1, set(), revision=1)[0][0]
    assert (old.family, old.get("tile_m"), old.get("tile_n")) == ("sm90_cutlass", 128, 256)
    new = vendor_seeds(shape, SPACES, algos, times, HANDPICKED, 1, set())[0][0]
    assert new.id == wide.id
    # a tile the base's own schedule holds keeps the base's schedule (the first attempt)
    assert mirror(VendorPick.read("v", config("128x128", 5)), get_space("sm90_cutlass"), shape,
                  HANDPICKED).get("wg_split") != "n"


def test_a_grid_counts_tiles_along_the_axes_the_family_walks_and_its_split():
    swapped, wide = get_space("sm90_swapab"), Problem.parse("1100x4096x1024")
    g = mirror(VendorPick.read("v", config("256x128", cluster_id=5)), swapped, wide, HANDPICKED)   # N x M
    assert (g.get("tile_m"), g.get("tile_n")) == (256, 128)       # tile M along N (4096), tile N along M (1100)
    assert grid_ctas(g, swapped, wide) == 16 * 9                  # not 5 * 32, the axes the other way round
    split = Problem.parse("512x512x16384")
    for family, knob in (("sm90_splitk", "ksplit"), ("sm90_cutlass", "splits")):
        k = mirror(VendorPick.read("v", config("64x128", cluster_id=3, splitk=4)), get_space(family), split,
                   HANDPICKED)
        assert k.get(knob) == 4 and (k.get("tile_m"), k.get("tile_n")) == (128, 64)
        assert grid_ctas(k, get_space(family), split) == 4 * 8 * 4


def test_a_mirror_whose_grid_fills_a_wave_is_followed_by_its_twin_without_the_cluster():
    pick = VendorPick.read("v", config("176x128", cluster_id=5))                 # 176 along N, cluster 1x2x1
    shape, space = Problem.parse("8192x8192x1024"), get_space("sm90_cutlass")
    clustered = mirror(pick, space, shape, HANDPICKED)
    assert (clustered.get("tile_m"), clustered.get("tile_n"), clustered.get("cluster_m"), clustered.get("cluster_n")) \
        == (128, 176, 2, 1)
    assert grid_ctas(clustered, space, shape) == 64 * 47
    twin = unclustered_twin(clustered, space, shape, 132)
    assert (twin.get("tile_m"), twin.get("tile_n"), twin.get("cluster_m"), twin.get("cluster_n")) == (128, 176, 1, 1)
    assert {k: v for k, v in twin.param_dict.items() if not k.startswith("cluster")} == \
        {k: v for k, v in clustered.param_dict.items() if not k.startswith("cluster")} and space.is_valid(twin, shape)
    assert unclustered_twin(clustered, space, shape, 64 * 47 + 1) is None        # under a wave: none
    assert unclustered_twin(twin, space, shape, 132) is None                      # no cluster to drop
    algos, times = {"a": config("176x128", 5)}, {"a": 190.0}
    seeds = vendor_seeds(shape, SPACES, algos, times, HANDPICKED, 2, set())
    assert [g.id for g, _, _ in seeds] == [clustered.id, twin.id]
    assert "cluster 1x1 for the mirror's 2x1: 3008 work tiles, at least a wave of 132 SMs" in seeds[1][2]
    assert twin.id not in {g.id for g, _, _ in vendor_seeds(shape, SPACES, algos, times, HANDPICKED, 2, set(),
                                                               revision=1)}
    assert unclustered_twin(clustered, space, shape, 64 * 47).id == twin.id       # exactly a wave: a twin
    # 1000^3: the vendor's 72x128 in 2x4 is 104 CTAs of 132 SMs, the cluster stays (its twin measured 20% slower)
    cube = vendor_seeds(CUBE, SPACES, {"a": config("72x128", 9)}, {"a": 7.3}, HANDPICKED, 3, set())
    assert all(g.get("cluster_m") * g.get("cluster_n") == 8 for g, _, _ in cube)


class VendorEvaluator(FakeEvaluator):
    """The fake evaluator with a cuBLASLt baseline that says what it ran (as a GPU worker's does)."""

    algorithm = config("72x128", 9)

    def baselines(self, problem: Problem):
        bs = super().baselines(problem)
        bs.algorithms["cublaslt"] = self.algorithm
        return bs


class WaveVendorEvaluator(VendorEvaluator):
    algorithm = config("128x128", 3)                                             # cluster 2x1x1


def run(folder: Path, evaluator_cls, shape: str = "1000x1000x1000", revision: "int | None" = None, **population):
    """The first round's proposals of a one-shape sm90_cutlass campaign (`revision`: its vendor mirrors' as
    recorded at creation; None: as a new campaign records)."""
    pop = {"size": 2, "islands": 1, "offspring": 2, "elite": 1, "migration_size": 1, "seed_fraction": 1.0,
           "screen": 2, "wave_seeds": 0, **population}
    cfg = parse_campaign(small_config(shapes=[shape], families=["sm90_cutlass"], population=pop,
                                      budget={"evaluations_per_shape": 12}), base_dir=folder.parent)
    create_campaign(cfg, folder)
    db = CampaignDB(folder / "campaign.db")
    try:
        assert vendor_mirrors_revision(db) == VENDOR_MIRRORS_REVISION
        if revision is not None:
            db.set_meta({VENDOR_MIRRORS_KEY: revision})
    finally:
        db.close()
    run_campaign(folder, evaluator=evaluator_cls(seed=cfg.seed), progress=SilentProgress())
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return conn.execute("SELECT operator, genome_id, note FROM proposals WHERE problem=? AND round=0 "
                            "ORDER BY seq", (shape,)).fetchall()
    finally:
        conn.close()


def test_the_first_round_times_the_mirror_on_top_of_the_other_seeds(tmp_path):
    with_mirror = run(tmp_path / "on", VendorEvaluator)
    mirrors = [row for row in with_mirror if row[0] == VENDOR_ORIGIN]
    assert len(mirrors) == 1 and "sm90_cutlass 128x80, cluster 4x2" in mirrors[0][2]
    without = run(tmp_path / "off", VendorEvaluator, vendor_seeds=0)
    assert not [row for row in without if row[0] == VENDOR_ORIGIN]
    assert len(with_mirror) == len(without) + 1            # on top: the screen grows by it
    # a campaign whose baselines name no algorithm (the simulator's) times none
    assert not [row for row in run(tmp_path / "sim", FakeEvaluator) if row[0] == VENDOR_ORIGIN]


def test_a_campaign_times_the_unclustered_twin_only_at_the_mirrors_revision_it_was_created_with(tmp_path):
    """4096x1024x1024: the vendor's 128x128 in a 2x1 cluster is 256 CTAs, two waves; a new campaign (revision 2)
    times the mirror and its twin without the cluster, one created at revision 1 (recorded none) the mirror
    alone, as it did when it ran, so its resume replays."""
    shape = "4096x1024x1024"
    new = [row for row in run(tmp_path / "new", WaveVendorEvaluator, shape) if row[0] == VENDOR_ORIGIN]
    assert len(new) == 2 and "cluster 1x2" in new[0][2] and "cluster 1x1 for the mirror's 1x2" in new[1][2]
    old = [row for row in run(tmp_path / "old", WaveVendorEvaluator, shape, revision=1) if row[0] == VENDOR_ORIGIN]
    assert [row[1] for row in old] == [new[0][1]]
    db = CampaignDB(tmp_path / "old" / "campaign.db")
    try:
        db.conn.execute("DELETE FROM meta WHERE key=?", (VENDOR_MIRRORS_KEY,))
        assert vendor_mirrors_revision(db) == 1                    # a campaign of before the record
    finally:
        db.close()
