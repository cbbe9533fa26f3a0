"""population.wave_seeds: one-wave sm90_lean tiles on top of a shape's first-round seeds."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from engine_helpers import FakeEvaluator, fingerprint, small_config
from evolution.seeding import WAVE_ORIGIN, wave_fit_seeds
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


def run(folder: Path, waves: "int | None", shapes=SHAPES):
    population = dict(POP) if waves is None else {**POP, "wave_seeds": waves}
    config = parse_campaign(small_config(shapes=list(shapes), families=["sm90_cutlass", LEAN], population=population,
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
    # 3072 rows are 24 rows of 128-row tiles: no tile N that one warpgroup holds gives one wave
    shape = "3072x1280x1024"
    run(tmp_path / "zero", 0, shapes=[shape])
    run(tmp_path / "two", 2, shapes=[shape])
    assert first_round(tmp_path / "two", shape) == first_round(tmp_path / "zero", shape)


def test_a_campaign_recorded_before_the_option_resumes_without_it(tmp_path):
    made = parse_campaign(small_config(population=POP), base_dir=tmp_path)
    assert made.population.wave_seeds == 2
    recorded = made.resolved()
    del recorded["population"]["wave_seeds"]            # as a folder created before session 37 holds it
    assert parse_campaign(recorded, base_dir=tmp_path, stored=True).population.wave_seeds == 0
    recorded["population"]["wave_seeds"] = 2            # one created since says what it had
    assert parse_campaign(recorded, base_dir=tmp_path, stored=True).population.wave_seeds == 2


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
