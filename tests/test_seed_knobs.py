"""Seeds take their family's shape knobs (split-K factors, K split over a cluster) fitted to the shape
by the family's simulator model: population.fit_knobs, evolution/seeding.py's fit_shape_knobs."""

from __future__ import annotations

import dataclasses

import pytest

from evaluator.compile import Compiler
from evaluator.simulator import SimulatedEvaluator
from evolution.seeding import fit_shape_knobs, load_handpicked, model_order, prune_families, seeds_for
from experiments.schema import parse_campaign
from genome import Genome, Problem
from templates import family_registry

REG = family_registry()


def splitk(ksplit: int, **params) -> Genome:
    space = REG.space("sm90_splitk")
    values = {**space.default_params(), "tile_m": 128, "tile_n": 128, "schedule": "pingpong", "ksplit": ksplit,
              **params}
    return space.normalise(Genome.make("sm90_splitk", values))


def test_every_family_names_runtime_parameters_as_its_shape_knobs():
    for name in ("sm90_cutlass", "sm90_splitk", "sm80_cutlass", "sm90_lean", "sm90_padded", "sm90_swapab",
                 "sm90_cpasync"):
        space = REG.space(name)
        assert space.shape_knobs, name
        assert all(space.spec(k).kind == "runtime" for k in space.shape_knobs), name
    assert REG.space("sm90_splitk").shape_knobs == ("ksplit",)
    # skinny_mma's model picks cluster_k badly on the H200 (up to 22x slower): its seeds keep theirs
    assert REG.space("skinny_mma").shape_knobs == ()
    with pytest.raises(ValueError, match="not a runtime parameter"):
        dataclasses.replace(REG.space("sm90_cutlass"), shape_knobs=("tile_m",))


def test_the_fit_takes_the_knobs_the_price_finds_fastest_and_keeps_the_binary():
    space = REG.space("sm90_splitk")
    problem = Problem(640, 640, 12288)
    seed = splitk(8)
    # a made-up price: 100 us at the seed's split, best at 4 (25 tiles x 4 = 100 CTAs), 3 impossible (K/3)
    price = lambda g: {4: 80.0, 6: 90.0}.get(g["ksplit"], 100.0)     # noqa: E731
    fitted = fit_shape_knobs(seed, problem, space, price)
    assert fitted["ksplit"] == 4
    assert {k: v for k, v in fitted.param_dict.items() if k != "ksplit"} == \
        {k: v for k, v in seed.param_dict.items() if k != "ksplit"}
    compiler = Compiler.default("/nonexistent-cache-never-written")
    assert compiler.key_of(fitted) == compiler.key_of(seed)                # the same build
    # a gain under min_gain, or none: the seed as it was
    assert fit_shape_knobs(seed, problem, space, lambda g: 97.0 if g["ksplit"] == 4 else 100.0) == seed
    assert fit_shape_knobs(seed, problem, space, lambda g: 100.0) == seed
    assert fit_shape_knobs(seed, problem, space, lambda g: float("inf")) == seed
    # only valid values are taken: K = 12288 does not split into 5 equal parts of a multiple of 8
    assert fit_shape_knobs(seed, problem, space, lambda g: 1.0 if g["ksplit"] == 5 else 100.0) == seed
    # a family without shape knobs is left alone
    bare = dataclasses.replace(space, shape_knobs=())
    assert fit_shape_knobs(seed, problem, bare, price) == seed


def test_the_simulator_fits_the_split_to_the_wave_count():
    """The split-K model prices a split that fills the SMs faster: 8 splits of 25 tiles (200 CTAs on 132
    SMs) move to 4 at 640x640x12288; at 64x64x4096 the reduction's chain of loads keeps it from the
    largest splits (measured on the H200: 64 splits 30-45% slower than 8-16)."""
    space = REG.space("sm90_splitk")
    for shape, expect in (("640x640x12288", {4}), ("512x512x16384", {8}), ("64x64x4096", {8, 16})):
        problem = Problem.parse(shape)
        fitted = fit_shape_knobs(splitk(2), problem, space, model_order(problem))
        assert fitted["ksplit"] in expect, (shape, fitted["ksplit"])
    sim = SimulatedEvaluator()
    problem = Problem(640, 640, 12288)
    assert sim.predict_us(splitk(4), problem) < 0.95 * sim.predict_us(splitk(8), problem)


def test_seeds_come_fitted_with_a_note_and_pruning_prices_them_fitted():
    space = REG.space("sm90_splitk")
    problem = Problem(640, 640, 12288)
    price = lambda g: 80.0 if g["ksplit"] == 4 else 100.0                 # noqa: E731
    fit = lambda g: fit_shape_knobs(g, problem, space, price)             # noqa: E731
    near, other = splitk(8), splitk(16, tile_n=64)
    handpicked = [{"name": "hp8", "genome": splitk(8, tile_k=128).to_dict()}]
    out = seeds_for(problem, space, {"512x512x16384": [near, other]}, {}, handpicked, k_shapes=3, limit=3,
                    order=price, fit=fit)
    assert [g["ksplit"] for g, _, _ in out] == [4, 4, 4]
    assert all("knobs fitted to the shape: ksplit 8->4" in note or "ksplit 16->4" in note for _, _, note in out)
    plain = seeds_for(problem, space, {"512x512x16384": [near, other]}, {}, handpicked, k_shapes=3, limit=3,
                      order=price)
    assert sorted(g["ksplit"] for g, _, _ in plain) == [8, 8, 16]
    assert all("fitted" not in note for _, _, note in plain)
    # knobs measured at this very shape stand, also for the same genome coming from another shape; and
    # a fitted twin that is a genome measured here is that seed, with its own origin and note
    measured = lambda g: {"640x640x12288": [{"genome": g.to_dict(), "time_us": 30.0}]}   # noqa: E731 - seed_from
    here = seeds_for(problem, space, {"512x512x16384": [splitk(8)]}, measured(splitk(8)), [],
                     k_shapes=3, limit=3, fit=fit)
    assert [g["ksplit"] for g, _, _ in here] == [8] and "fitted" not in here[0][2]
    here = seeds_for(problem, space, {"512x512x16384": [splitk(8, tile_n=64)]}, measured(splitk(8)), [],
                     k_shapes=3, limit=3, fit=fit)
    assert [(g["tile_n"], g["ksplit"]) for g, _, _ in here] == [(128, 8), (64, 4)] and "fitted" in here[1][2]
    same = seeds_for(problem, space, {"512x512x16384": [splitk(8)]}, measured(splitk(4)), [],
                     k_shapes=3, limit=3, fit=fit)
    assert [(g["ksplit"], origin) for g, origin, _ in same] == [(4, "seed_from")] and "fitted" not in same[0][2]
    # two seeds that differ only in the knob become one seed
    twins = seeds_for(problem, space, {"512x512x16384": [splitk(8), splitk(2)]}, {}, [], k_shapes=3, limit=3,
                      fit=fit)
    assert len(twins) == 1
    # pruning: a family whose seeds are all mis-split is priced as the seeds will be taken
    spaces = [REG.space("sm90_cutlass"), space]
    hp = [*load_handpicked(["sm90_cutlass"]), {"name": "sk", "genome": splitk(8).to_dict()}]
    cost = lambda g: 30.0 if g.family == "sm90_cutlass" else (20.0 if g["ksplit"] == 4 else 100.0)   # noqa: E731
    kept, dropped = prune_families(spaces, problem, hp, 3.0, order=cost)
    assert [s.family for s in kept] == ["sm90_cutlass"] and dropped == [("sm90_splitk", 100.0, 30.0)]
    kept, dropped = prune_families(spaces, problem, hp, 3.0, order=cost, fit_knobs=True)
    assert len(kept) == 2 and not dropped


def test_campaigns_fit_by_default_and_the_simulator_ablations_do_not(tmp_path):
    data = {"name": "t", "shapes": ["640x640x12288"], "families": ["sm90_splitk"],
            "budget": {"evaluations_per_shape": 8}}
    assert parse_campaign(data, base_dir=tmp_path).population.fit_knobs is True
    data["population"] = {"fit_knobs": False}
    assert parse_campaign(data, base_dir=tmp_path).population.fit_knobs is False
    # an ablation on the simulator must not hand every strategy the simulator's own best knobs
    from experiments.ablation import run_one
    from experiments.schema import load_campaign
    run_one("experiments/campaigns/quickstart.yaml", "evolution_rl", 0, "thompson", str(tmp_path / "abl"), budget=2)
    assert load_campaign(tmp_path / "abl" / "campaign.yaml").population.fit_knobs is False


def test_a_campaign_recorded_before_fit_knobs_existed_resumes_without_it(tmp_path):
    """Its first seeds were taken with their own knobs: a resume (and an extend) keeps it so, where the
    new default would pick other seeds and stop the replay."""
    import yaml
    from evolution.db import CampaignDB
    from experiments.campaign import create_campaign, run_campaign
    from experiments.campaign_changes import extend_campaign
    from experiments.campaign_folder import open_campaign
    from experiments.progress import SilentProgress
    data = {"name": "old", "seed": 3, "shapes": ["640x640x12288"], "families": ["sm90_splitk"],
            "evaluator": {"backend": "simulator"}, "budget": {"evaluations_per_shape": 6},
            "population": {"size": 2, "islands": 1, "offspring": 1, "elite": 1, "migration_size": 1}}
    folder = tmp_path / "c"
    create_campaign(parse_campaign(data, base_dir=tmp_path), folder)
    db = CampaignDB(folder / "campaign.db")
    stored = db.get_meta("config")
    assert stored["population"]["fit_knobs"] is True
    del stored["population"]["fit_knobs"]                                   # as recorded before session 25
    db.set_meta({"config": stored})
    db.close()
    (folder / "campaign.yaml").write_text(yaml.safe_dump(stored, sort_keys=False))
    config, db = open_campaign(folder)
    db.close()
    assert config.population.fit_knobs is False
    run_campaign(folder, progress=SilentProgress(), mode="run", plots=False)
    extend_campaign(folder, evaluations=2)
    config, db = open_campaign(folder)
    assert config.population.fit_knobs is False and db.get_meta("config")["population"]["fit_knobs"] is False
    db.close()
    run_campaign(folder, progress=SilentProgress(), mode="resume", plots=False)


def test_a_campaign_takes_its_first_seeds_fitted_and_says_so(tmp_path):
    import sqlite3
    from experiments.campaign import create_campaign, run_campaign
    from experiments.progress import SilentProgress

    def first_round(fit: bool) -> list[tuple[str, str]]:
        data = {"name": "fit", "seed": 1, "shapes": ["640x640x12288"], "families": ["sm90_splitk"],
                "evaluator": {"backend": "simulator"}, "budget": {"evaluations_per_shape": 6},
                "population": {"size": 4, "islands": 1, "offspring": 1, "elite": 1, "migration_size": 1,
                               "seed_fraction": 1.0, "fit_knobs": fit}}
        folder = tmp_path / f"c{int(fit)}"
        create_campaign(parse_campaign(data, base_dir=tmp_path), folder)
        run_campaign(folder, progress=SilentProgress(), mode="run", plots=False)
        conn = sqlite3.connect(str(folder / "campaign.db"))
        try:
            rows = conn.execute("SELECT p.note, g.json FROM proposals p JOIN genomes g ON g.id = p.genome_id "
                                "WHERE p.round = 0 AND p.operator = 'handpicked' ORDER BY p.seq").fetchall()
        finally:
            conn.close()
        return [(note, Genome.from_json(js)["ksplit"]) for note, js in rows]

    on, off = first_round(True), first_round(False)
    assert on and off
    assert any("knobs fitted to the shape: ksplit" in note for note, _ in on)
    assert not any("fitted" in note for note, _ in off)
    # the split the model prices fastest here (25 tiles of 128x128: 4 splits, 100 CTAs) leads the fitted seeds
    assert on[0][1] != off[0][1] or "fitted" in on[0][0]


def test_many_shape_knobs_are_fitted_one_at_a_time_from_the_best_so_far():
    space = dataclasses.replace(REG.space("sm90_cutlass"),
                                shape_knobs=("raster", "swizzle", "splits", "decomposition", "reduction"))
    assert __import__("math").prod(len(space.spec(k).choices) for k in space.shape_knobs) > 512
    problem = Problem(4096, 4096, 4096)
    seed = space.validate(Genome.make("sm90_cutlass", dict(space.default_params(), raster="heuristic", swizzle=1,
                                                           schedule="pingpong", tile_m=128, tile_n=128)),
                          problem)
    price = lambda g: 100.0 - 10.0 * (g["raster"] == "along_m") - 10.0 * (g["swizzle"] == 8)   # noqa: E731
    fitted = fit_shape_knobs(seed, problem, space, price)
    assert (fitted["raster"], fitted["swizzle"]) == ("along_m", 8)
