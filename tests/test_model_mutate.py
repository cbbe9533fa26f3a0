"""model_mutate: mutation guided by the analytic model (a surrogate), and how the engine hands it the model."""

from __future__ import annotations

import random
import sqlite3

import pytest

from evolution.seeding import model_order
from experiments.campaign import create_campaign, run_campaign
from experiments.progress import SilentProgress
from experiments.schema import parse_campaign
from genome import (Genome, ModelMutate, OperatorContext, OperatorError, Patch, Problem, apply_operator,
                    classic_operators)
from templates import family_registry

REG = family_registry()
SPACE = REG.space("sm90_cutlass")
PROBLEM = Problem(1536, 1536, 6144)


def _parent() -> Genome:
    return REG.resolve("sm90_cutlass").seeds()[0][1]


def _ctx(seed: int, price=None, history=None, frozen=None) -> OperatorContext:
    return OperatorContext(space=SPACE, problem=PROBLEM, rng=random.Random(seed), price=price,
                           history=history or {}, frozen=frozen)


def test_it_proposes_the_candidate_the_price_finds_fastest():
    parent = _parent()
    seen: list[Genome] = []

    def cost(g: Genome) -> float:    # a made-up surrogate: wider tiles are faster
        return 1000.0 / g["tile_n"] + g["stages"] * 0.001

    def price(g: Genome) -> float:
        seen.append(g)
        return cost(g)

    kids = ModelMutate(candidates=12, n_changes=2)([parent], _ctx(5, price))
    assert len(kids) == 1
    kid = kids[0].genome
    assert kid.id != parent.id and SPACE.is_valid(kid, PROBLEM)
    assert len(seen) >= 2                                   # it ranked several candidates
    assert cost(kid) == min(cost(g) for g in seen)          # and took the fastest of them
    assert kids[0].operator == "model_mutate" and kids[0].parent_ids == (parent.id,)
    assert "fastest of" in kids[0].note
    # the same generator gives the same child; the price function alone decides among candidates
    again = ModelMutate(candidates=12, n_changes=2)([parent], _ctx(5, price))
    assert again[0].genome.id == kid.id
    slowest = ModelMutate(candidates=12, n_changes=2)([parent], _ctx(5, lambda g: -cost(g)))
    assert slowest[0].genome.id != kid.id


def test_jumps_rank_genomes_from_the_whole_space_too():
    parent = _parent()
    model = model_order(PROBLEM)
    calls: list[int] = []

    def counted(g: Genome) -> float:
        calls.append(1)
        return model(g)
    local = ModelMutate(candidates=4, n_changes=1)([parent], _ctx(11, counted))[0]
    n_local = len(calls)
    wide = ModelMutate(candidates=4, n_changes=1, jumps=32)([parent], _ctx(11, counted))[0]
    assert n_local <= 4 < len(calls) - n_local              # the samples were priced too
    assert model(wide.genome) <= model(local.genome)        # the same 4 moves, and 32 samples more
    # a price that favours samples far from the parent makes a jump win, and the note says so
    far = ModelMutate(candidates=4, n_changes=1, jumps=32)(
        [parent], _ctx(11, lambda g: -sum(g.param_dict.get(k) != v for k, v in parent.param_dict.items())))[0]
    assert "a jump" in far.note


def test_it_skips_genomes_already_measured_or_proposed():
    parent = _parent()
    model = model_order(PROBLEM)
    first = ModelMutate(candidates=8)([parent], _ctx(2, model))[0].genome
    measured = ModelMutate(candidates=8)([parent], _ctx(2, model, history={"times": {first.id: 50.0}}))
    assert measured and measured[0].genome.id != first.id   # the runner-up, not nothing
    ctx = _ctx(2, model)
    ctx.proposed = frozenset({first.id})                     # proposed before (failed, or still in flight)
    proposed = ModelMutate(candidates=8)([parent], ctx)
    assert proposed and proposed[0].genome.id == measured[0].genome.id


def test_every_child_is_valid_on_the_shape_and_in_its_parents_family():
    """A parent of another family than ctx.space is mutated in its own space (ctx.space_of), and
    candidates the shape does not allow never come out (M = 64: no 256-row tile, say)."""
    lean = REG.space("sm90_lean")
    problem = Problem(64, 4096, 4096)
    parent = next(g for _, g in REG.resolve("sm90_lean").seeds() if lean.is_valid(g, problem))
    for seed in range(15):
        ctx = OperatorContext(space=SPACE, problem=problem, rng=random.Random(seed), price=model_order(problem),
                              spaces={"sm90_cutlass": SPACE, "sm90_lean": lean})
        for kid in ModelMutate(candidates=6, jumps=6)([parent], ctx):
            assert kid.genome.family == "sm90_lean" and lean.is_valid(kid.genome, problem)


def test_without_a_model_it_fails_as_an_operator_and_an_unpriced_pool_gives_a_plain_mutation():
    parent = _parent()
    with pytest.raises(OperatorError) as err:
        ModelMutate()([parent], _ctx(1))
    assert err.value.kind == "unavailable"
    kids = ModelMutate(candidates=3)([parent], _ctx(1, lambda g: float("inf")))
    assert len(kids) == 1 and "priced no candidate" in kids[0].note and kids[0].genome.id != parent.id
    # a NaN price ranks last, not first
    cost = model_order(PROBLEM)
    nan_first = ModelMutate(candidates=6)([parent], _ctx(1, lambda g: float("nan") if g.id == kids[0].genome.id
                                                         else cost(g)))
    assert nan_first[0].genome.id != kids[0].genome.id and "fastest of" in nan_first[0].note


def test_a_patched_parent_keeps_its_frozen_parameters_and_its_patches_and_takes_no_jumps():
    parent = _parent()
    far = lambda g: -sum(g.param_dict.get(k) != v for k, v in parent.param_dict.items())  # jumps would win  # noqa: E731
    # a patch that freezes tile parameters, and one that freezes none (a `kernel` block)
    for block, frozen in (("tile_config", {"tile_m", "tile_n", "tile_k"}), ("kernel", set())):
        patched = Genome.make(parent.family, parent.param_dict, (Patch(block, "x", "y"),))
        for seed in range(6):
            ctx = _ctx(seed, far, frozen=lambda g, f=frozen: frozenset(f))
            kids = apply_operator(ModelMutate(candidates=8, jumps=16), [patched], ctx)
            assert kids
            for kid in kids:
                assert all(kid.genome[name] == patched[name] for name in frozen)
                assert kid.genome.patches == patched.patches and "a move" in kid.note


def test_bad_settings_are_refused_and_the_name_is_registered():
    assert classic_operators()["model_mutate"] is ModelMutate
    for bad in ({"candidates": 0}, {"n_changes": 0}, {"jumps": -1}):
        with pytest.raises(ValueError, match="model_mutate"):
            ModelMutate(**bad)


def _campaign(tmp_path, name: str, operators: list) -> list[tuple[str, str]]:
    data = {"name": name, "seed": 3, "shapes": ["1536x1536x6144"], "families": ["sm90_cutlass"],
            "evaluator": {"backend": "simulator"}, "budget": {"evaluations_per_shape": 30},
            "population": {"size": 6, "islands": 1, "offspring": 6, "elite": 1, "migration_size": 1,
                           "seed_fraction": 0.0},
            "operators": operators}
    folder = tmp_path / name
    create_campaign(parse_campaign(data, base_dir=tmp_path), folder)
    run_campaign(folder, progress=SilentProgress(), mode="run", plots=False)
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return conn.execute("SELECT p.operator, p.note FROM proposals p WHERE p.round > 0 ORDER BY p.seq").fetchall()
    finally:
        conn.close()


def test_a_campaign_hands_the_operator_its_model(tmp_path):
    """The engine gives operators the campaign's model (OperatorContext.price): every later-round child
    of a model_mutate-only campaign comes from it, ranked (a missing model would fail every call and
    leave the rounds to fresh samples)."""
    rows = _campaign(tmp_path, "mm", [{"name": "model_mutate", "params": {"candidates": 6, "jumps": 4}}])
    assert rows and all(op == "model_mutate" for op, _ in rows)
    assert all("fastest of" in (note or "") for _, note in rows)


def test_on_the_simulator_the_ranking_finds_faster_genomes(tmp_path):
    """On the simulator the model is the evaluator, so model_mutate is an oracle there: ranking 8
    candidates must find a faster genome than taking the one candidate there is (candidates: 1, the
    same draws otherwise), with the same budget and seed. A check of the wiring, not a result."""
    def best(name: str, candidates: int) -> float:
        _campaign(tmp_path, name, [{"name": "model_mutate", "params": {"candidates": candidates}}])
        conn = sqlite3.connect(str(tmp_path / name / "campaign.db"))
        try:
            return conn.execute("SELECT MIN(device_us) FROM evaluations WHERE status = 'ok'").fetchone()[0]
        finally:
            conn.close()
    assert best("ranked", 8) < best("unranked", 1)


def test_the_model_is_made_only_when_an_operator_prices(monkeypatch):
    from evolution import seeding
    made: list[int] = []
    real = seeding.model_order
    monkeypatch.setattr(seeding, "model_order", lambda *a, **k: made.append(1) or real(*a, **k))
    price = seeding.lazy_model_order(PROBLEM)
    assert made == []
    t = price(_parent())
    price(_parent())
    assert made == [1] and t == real(PROBLEM)(_parent())


def test_an_ablation_refuses_a_campaign_that_ranks_by_the_model(tmp_path):
    from experiments.ablation import run_ablation
    path = tmp_path / "c.yaml"
    path.write_text("name: mm\nseed: 0\nshapes: [1024x1024x1024]\nfamilies: [sm90_cutlass]\n"
                    "evaluator: {backend: simulator}\nbudget: {evaluations_per_shape: 12}\n"
                    "operators:\n  - {name: param_mutate}\n  - {name: model_mutate}\n")
    with pytest.raises(ValueError, match="model_mutate.*oracle"):
        run_ablation(str(path), seeds=1, out_dir=tmp_path / "out")
    assert not (tmp_path / "out" / "runs").exists()
