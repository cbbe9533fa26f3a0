"""population.wave_seeds: one-wave sm90_lean tiles on top of a shape's first-round seeds, and sm90_cutlass
cooperative ones where sm90_lean has too few (population.wave_cooperative)."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from engine_helpers import FakeEvaluator, fingerprint, small_config
from evolution.wave_seeds import WAVE_ORIGIN, cooperative_wave_seeds, one_wave_seeds, wave_fit_seeds
from experiments.campaign import create_campaign, run_campaign
from experiments.progress import SilentProgress
from experiments.schema import CampaignError, parse_campaign
from genome import Genome, Problem
from templates import get_space

LEAN = "sm90_lean"
SHAPES = ["1664x1664x1664", "1024x1024x1024", "2048x1024x1024"]
MEASURED = ["74080ba8", "b411b7b3"]   # 128x176 and 128x192, the kernels timed at 1664^3
POP = {"size": 2, "islands": 1, "offspring": 2, "elite": 1, "migration_size": 1, "seed_fraction": 1.0, "screen": 4}


def ctas(problem: Problem, genome: Genome) -> int:
    return math.ceil(problem.m / genome.get("tile_m")) * math.ceil(problem.n / genome.get("tile_n"))


def test_the_tiles_that_fill_one_wave_best_come_first():
    space, problem = get_space(LEAN), Problem.parse("1664x1664x1664")
    seeds = wave_fit_seeds(problem, space, 132, 3)
    # 128x208 and wider would need more accumulators than one warpgroup holds: only two are valid
    assert [(g.get("tile_m"), g.get("tile_n")) for g, _, _ in seeds] == [(128, 176), (128, 192)]
    assert [ctas(problem, g) for g, _, _ in seeds] == [130, 117]
    for genome, origin, note in seeds:
        assert origin == WAVE_ORIGIN and space.is_valid(genome, problem)
        assert [genome.get(k) for k in ("cluster_m", "cluster_n", "stages", "tile_k")] == [1, 1, 0, 64]
        assert f"{ctas(problem, genome)} CTAs" in note
    # the genomes measured on the H200 (docs/results/h200-first-round-picks/wave-fit/kernels)
    assert [g.id[:8] for g, _, _ in seeds] == MEASURED
    # what is taken already is passed over; the count is a maximum
    again = wave_fit_seeds(problem, space, 132, 1, taken={seeds[0][0].id})
    assert [g.id for g, _, _ in again] == [seeds[1][0].id]
    assert wave_fit_seeds(problem, space, 132, 0) == []
    # no 128-row tile gives one wave (24 rows of tiles need N tiles of 256, which one warpgroup cannot hold)
    assert wave_fit_seeds(Problem.parse("3072x1280x1024"), space, 132, 2) == []
    # a smaller GPU: fewer CTAs a wave
    cube = Problem.parse("1024x1024x1024")
    small = wave_fit_seeds(cube, space, 66, 2)   # 8 x 8 CTAs either way: the narrower tile first
    assert [(ctas(cube, g), g.get("tile_n")) for g, _, _ in small] == [(64, 128), (64, 144)]


def run(folder: Path, waves: "int | None", shapes=SHAPES, families=("sm90_cutlass", LEAN), **options):
    population = {**(POP if waves is None else {**POP, "wave_seeds": waves}), **options}
    config = parse_campaign(small_config(shapes=list(shapes), families=list(families), population=population,
                                         budget={"evaluations_per_shape": 20}), base_dir=folder.parent)
    create_campaign(config, folder)
    return run_campaign(folder, evaluator=FakeEvaluator(seed=config.seed), progress=SilentProgress())


def first_round(folder: Path, shape: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return conn.execute("SELECT operator, genome_id FROM proposals WHERE problem=? AND round=0 ORDER BY seq",
                            (shape,)).fetchall()
    finally:
        conn.close()


def test_two_wave_seeds_are_the_default_and_zero_times_none(tmp_path):
    run(tmp_path / "absent", None)
    run(tmp_path / "two", 2)
    run(tmp_path / "zero", 0)
    assert fingerprint(tmp_path / "absent") == fingerprint(tmp_path / "two")
    assert not [g for op, g in first_round(tmp_path / "zero", SHAPES[0]) if op == WAVE_ORIGIN]


def test_where_no_tile_fits_one_wave_the_first_round_is_as_without(tmp_path):
    # 4096 rows are 32 rows of 128-row tiles and 16 of 256-row ones: no tile N that one warpgroup (sm90_lean) or
    # two (cooperative, at most 192 accumulators a thread) hold gives one wave
    shape = "4096x2048x1024"
    run(tmp_path / "zero", 0, shapes=[shape])
    run(tmp_path / "two", 2, shapes=[shape])
    assert first_round(tmp_path / "two", shape) == first_round(tmp_path / "zero", shape)


def test_cooperative_tiles_fill_the_wave_where_one_warpgroup_cannot():
    space = get_space("sm90_cutlass")
    # 1792 = 14 x 128: a one-wave tile N (208) needs more accumulators than one warpgroup holds
    cube = Problem.parse("1792x1792x1792")
    assert wave_fit_seeds(cube, get_space(LEAN), 132, 2) == []
    seeds = cooperative_wave_seeds(cube, space, 132, 3)
    got = [tuple(g.get(k) for k in ("tile_m", "tile_n", "cluster_m", "cluster_n")) + (ctas(cube, g),)
           for g, _, _ in seeds]
    # the most CTAs first (14 x 9, the pair along M: 9 tiles along N), then on a tie of 112 the taller tile
    assert got == [(128, 208, 2, 1, 126), (256, 112, 1, 2, 112), (128, 224, 1, 2, 112)]
    for genome, origin, note in seeds:
        assert origin == WAVE_ORIGIN and space.is_valid(genome, cube)
        assert [genome.get(k) for k in ("schedule", "scheduler", "stages", "tile_k")] == \
            ["cooperative", "persistent", 0, 64]
        assert f"{ctas(cube, genome)} CTAs" in note
    # a tie of CTAs goes to the base WGMMA width: 256x128 and 128x256 both make 128 CTAs at 2048^3
    square = cooperative_wave_seeds(Problem.parse("2048x2048x2048"), space, 132, 2)
    assert [(g.get("tile_m"), g.get("tile_n")) for g, _, _ in square] == [(256, 128), (128, 256)]
    # taken genomes are passed over
    again = cooperative_wave_seeds(cube, space, 132, 1, taken={seeds[0][0].id})
    assert [g.id for g, _, _ in again] == [seeds[1][0].id]
    # fewer than half the SMs busy is no one-wave seed (64x64x4096 would get one or two 256-row CTAs)
    assert cooperative_wave_seeds(Problem.parse("64x64x4096"), space, 132, 2) == []
    assert cooperative_wave_seeds(cube, space, 132, 0) == []


def test_the_cooperative_ones_take_only_the_slots_sm90_lean_leaves():
    spaces = [get_space("sm90_cutlass"), get_space(LEAN)]
    families = lambda seeds: [g.family for g, _, _ in seeds]   # noqa: E731
    # 1664^3: two sm90_lean tiles fit; 256x12288x4096: one (128x192); 1792^3: none
    assert families(one_wave_seeds(Problem.parse("1664x1664x1664"), spaces, 132, 2, set())) == [LEAN, LEAN]
    assert families(one_wave_seeds(Problem.parse("256x12288x4096"), spaces, 132, 2, set())) == [LEAN, "sm90_cutlass"]
    assert families(one_wave_seeds(Problem.parse("1792x1792x1792"), spaces, 132, 2, set())) == ["sm90_cutlass"] * 2
    assert one_wave_seeds(Problem.parse("1792x1792x1792"), spaces, 132, 2, set(), cooperative=False) == []
    # a campaign without sm90_cutlass, or without sm90_lean, takes what its families give
    assert one_wave_seeds(Problem.parse("1792x1792x1792"), [get_space(LEAN)], 132, 2, set()) == []
    assert families(one_wave_seeds(Problem.parse("1664x1664x1664"), [get_space("sm90_cutlass")], 132, 2, set())) \
        == ["sm90_cutlass"] * 2


def test_a_campaign_times_the_cooperative_ones_on_top_of_its_first_round(tmp_path):
    shape = "1792x1792x1792"
    run(tmp_path / "zero", 0, shapes=[shape])
    run(tmp_path / "lean", 2, shapes=[shape], wave_cooperative=False)
    run(tmp_path / "coop", 2, shapes=[shape])
    before, after = first_round(tmp_path / "zero", shape), first_round(tmp_path / "coop", shape)
    assert first_round(tmp_path / "lean", shape) == before           # no sm90_lean tile fits: nothing added
    extra = [g for op, g in after if op == WAVE_ORIGIN]
    coop = cooperative_wave_seeds(Problem.parse(shape), get_space("sm90_cutlass"), 132, 2)
    assert extra == [g.id for g, _, _ in coop]
    assert [x for x in after if x[0] != WAVE_ORIGIN] == before       # the other seeds, as they were


def test_a_campaign_recorded_before_the_option_resumes_without_it(tmp_path):
    made = parse_campaign(small_config(population=POP), base_dir=tmp_path)
    assert made.population.wave_seeds == 2
    recorded = made.resolved()
    del recorded["population"]["wave_seeds"]            # as a folder created before session 37 holds it
    assert parse_campaign(recorded, base_dir=tmp_path, stored=True).population.wave_seeds == 0
    recorded["population"]["wave_seeds"] = 2            # one created since says what it had
    assert parse_campaign(recorded, base_dir=tmp_path, stored=True).population.wave_seeds == 2


def test_a_campaign_recorded_before_the_cooperative_ones_resumes_without_them(tmp_path):
    made = parse_campaign(small_config(population=POP), base_dir=tmp_path)
    assert made.population.wave_cooperative is True
    recorded = made.resolved()
    del recorded["population"]["wave_cooperative"]      # as a folder created in sessions 37-38 holds it
    assert parse_campaign(recorded, base_dir=tmp_path, stored=True).population.wave_cooperative is False
    recorded["population"]["wave_cooperative"] = True
    assert parse_campaign(recorded, base_dir=tmp_path, stored=True).population.wave_cooperative is True


def test_the_first_round_takes_them_on_top_of_its_seeds(tmp_path):
    run(tmp_path / "plain", 0)
    run(tmp_path / "waves", 2)
    before, after = first_round(tmp_path / "plain", SHAPES[0]), first_round(tmp_path / "waves", SHAPES[0])
    extra = [g for op, g in after if op == WAVE_ORIGIN]
    assert len(extra) == 2
    assert [x for x in after if x[0] != WAVE_ORIGIN] == before          # the other seeds, as they were
    tiles = {(g.get("tile_m"), g.get("tile_n")) for g, _, _ in
             wave_fit_seeds(Problem.parse(SHAPES[0]), get_space(LEAN), 132, 4)}
    conn = sqlite3.connect(str(tmp_path / "waves" / "campaign.db"))
    try:
        genomes = {gid: Genome.from_json(js) for gid, js in conn.execute("SELECT id, json FROM genomes")}
    finally:
        conn.close()
    assert all((genomes[g].get("tile_m"), genomes[g].get("tile_n")) in tiles for g in extra)


def test_wave_seeds_are_bounded(tmp_path):
    for bad in (-1, 17):
        with pytest.raises(CampaignError, match="wave_seeds"):
            parse_campaign(small_config(population={**POP, "wave_seeds": bad}), base_dir=tmp_path)
