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
    local = ModelMutate(candidates=4, n_changes=1)([parent], _ctx(11, model))[0]
    wide = ModelMutate(candidates=4, n_changes=1, jumps=32)([parent], _ctx(11, model))[0]
    assert model(wide.genome) <= model(local.genome)        # the same 4 moves, and 32 samples more
    assert "a jump" in wide.note or wide.genome.id == local.genome.id


def test_it_skips_genomes_already_measured():
    parent = _parent()
    model = model_order(PROBLEM)
    first = ModelMutate(candidates=8)([parent], _ctx(2, model))[0].genome
    second = ModelMutate(candidates=8)([parent], _ctx(2, model, history={"times": {first.id: 50.0}}))
    assert second == [] or second[0].genome.id != first.id


def test_without_a_model_it_fails_as_an_operator_and_an_unpriced_pool_gives_a_plain_mutation():
    parent = _parent()
    with pytest.raises(OperatorError) as err:
        ModelMutate()([parent], _ctx(1))
    assert err.value.kind == "unavailable"
    kids = ModelMutate(candidates=3)([parent], _ctx(1, lambda g: float("inf")))
    assert len(kids) == 1 and "priced no candidate" in kids[0].note and kids[0].genome.id != parent.id


def test_a_patched_parent_keeps_its_frozen_parameters_and_takes_no_jumps():
    parent = _parent()
    patched = Genome.make(parent.family, parent.param_dict, (Patch("tile_config", "x", "y"),))
    frozen = {"tile_m", "tile_n", "tile_k"}
    ctx = _ctx(4, model_order(PROBLEM), frozen=lambda g: frozenset(frozen))
    kids = apply_operator(ModelMutate(candidates=8, jumps=16), [patched], ctx)
    for kid in kids:
        assert all(kid.genome[name] == patched[name] for name in frozen)
        assert kid.genome.patches == patched.patches


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


def test_on_the_simulator_its_children_beat_random_moves(tmp_path):
    """On the simulator the model is the evaluator, so model_mutate is an oracle there: it must find a
    faster genome than param_mutate with the same budget and seed (a check of the wiring, not a result)."""
    def best(name: str, op: str) -> float:
        _campaign(tmp_path, name, [{"name": op}])
        conn = sqlite3.connect(str(tmp_path / name / "campaign.db"))
        try:
            return conn.execute("SELECT MIN(device_us) FROM evaluations WHERE status = 'ok'").fetchone()[0]
        finally:
            conn.close()
    assert best("guided", "model_mutate") < best("random", "param_mutate")
