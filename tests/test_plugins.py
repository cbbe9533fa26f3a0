"""Plug-ins from modules outside the package run end to end like built-ins: a template family (a
copy of sm90_cutlass under another name, with its own template folder) through a simulator
campaign and a real nvcc build; the documented examples in experiments/plugins/ (operator,
policy, parent selection, strategy) through campaigns."""

from __future__ import annotations

import shutil
import sqlite3
import json
import textwrap
from pathlib import Path

import pytest

from engine_helpers import small_config
from evolution.plugins import make_plugins
from experiments.campaign import create_campaign, run_campaign
from experiments.schema import CampaignError, parse_campaign
from genome import Genome
from templates import get_family

FAMILY_MODULE = '''
"""A user's own template family, in a module outside evogemm."""
import dataclasses
from pathlib import Path

from genome import sm90_cutlass_space
from templates import TemplateFamily, get_family

HERE = Path(__file__).resolve().parent

def _space():
    return dataclasses.replace(sm90_cutlass_space.make_space(), family="my_sm90")

FAMILY = dataclasses.replace(get_family("sm90_cutlass"), name="my_sm90", make_space=_space,
                             template_dir=HERE / "my_sm90_template", seeds_dir=None)
'''


class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        self.rows = rows


@pytest.fixture()
def user_family(tmp_path, monkeypatch):
    """A package-less module `my_families` in tmp_path holding family `my_sm90`."""
    root = tmp_path / "userpkg"
    root.mkdir()
    (root / "my_families.py").write_text(textwrap.dedent(FAMILY_MODULE))
    shutil.copytree(get_family("sm90_cutlass").template_dir, root / "my_sm90_template",
                    ignore=shutil.ignore_patterns("*.py", "seeds", "__pycache__"))
    monkeypatch.syspath_prepend(str(root))
    return "my_families:FAMILY"


def campaign(tmp_path: Path, data: dict):
    config = parse_campaign(data, base_dir=tmp_path)
    folder = tmp_path / "c"
    create_campaign(config, folder)
    return run_campaign(folder, progress=Silent()), folder


def rows(folder: Path, sql: str):
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_a_family_from_a_users_module_runs_a_simulator_campaign(tmp_path, user_family):
    data = small_config(shapes=["1024x1024x1024"], families=[user_family], budget={"evaluations_per_shape": 16},
                        evaluator={"backend": "simulator"})
    result, folder = campaign(tmp_path, data)
    state = result.states["1024x1024x1024"]
    assert state.evaluations == 16 and state.best is not None
    assert {f for (f,) in rows(folder, "SELECT DISTINCT family FROM genomes")} == {"my_sm90"}
    ok = rows(folder, "SELECT COUNT(*) FROM evaluations WHERE status='ok'")[0][0]
    assert ok >= 8   # the simulator modelled the plug-in family through its simulator_model


def test_the_plugin_family_renders_from_its_own_template_folder(tmp_path, user_family):
    plugins = make_plugins([user_family])
    fam = plugins.families.resolve("my_sm90")
    assert fam.template_dir.parent.name == "userpkg"
    (fam.template_dir / fam.template_file).write_text(
        (fam.template_dir / fam.template_file).read_text().replace("#include", "// my_sm90 plug-in\n#include", 1))
    from templates import render
    g = fam.space.sample(__import__("random").Random(0))
    assert "// my_sm90 plug-in" in render(g, plugins.families).source
    with pytest.raises(ValueError, match="unknown template family 'my_sm90'"):
        render(g)                       # without the campaign's registry nobody knows it


def test_a_wrong_kind_family_is_refused_by_validation():
    with pytest.raises(CampaignError) as err:
        parse_campaign(small_config(families=["os.path:join"]))
    assert "families" in str(err.value) and "TemplateFamily" in str(err.value)


@pytest.mark.nvcc
def test_a_family_from_a_users_module_builds_with_nvcc(tmp_path, user_family, kernel_cache):
    from evaluator.compile import Compiler
    plugins = make_plugins([user_family])
    space = plugins.families.resolve("my_sm90").space
    params = dict(space.default_params(), schedule="pingpong", tile_m=64, tile_n=64, tile_k=64)
    genome = space.validate(Genome.make("my_sm90", params))
    result = Compiler.default(kernel_cache, families=plugins.families).build(genome)
    assert result.ok, result.reason
    assert Path(result.library).exists() and result.spill_bytes == 0


def test_example_operator_policy_parents_run_in_a_campaign(tmp_path):
    data = small_config(
        shapes=["1024x1024x1024"], evaluator={"backend": "simulator"}, budget={"evaluations_per_shape": 30},
        operators=[{"name": "param_mutate"}, {"name": "experiments.plugins.example_operator:TileNudge"}],
        selection={"policy": "experiments.plugins.example_policy:EpsilonGreedy", "params": {"epsilon": 0.3},
                   "parents": {"name": "experiments.plugins.example_parents:BestTwo"}})
    result, folder = campaign(tmp_path, data)
    assert result.states["1024x1024x1024"].evaluations == 30
    arms = {a for (a,) in rows(folder, "SELECT DISTINCT arm FROM proposals WHERE arm IS NOT NULL")}
    assert "experiments.plugins.example_operator:TileNudge" in arms
    ops = {o for (o,) in rows(folder, "SELECT DISTINCT operator FROM proposals")}
    assert "tile_nudge" in ops
    (policy,) = {p for (p,) in rows(folder, "SELECT DISTINCT policy FROM policy_log")}
    assert policy.endswith("EpsilonGreedy")


def test_example_policy_refuses_a_bad_parameter():
    data = small_config(selection={"policy": "experiments.plugins.example_policy:EpsilonGreedy",
                                   "params": {"epsilon": 3}})
    with pytest.raises(CampaignError, match="epsilon"):
        parse_campaign(data)


def test_example_strategy_runs_one_per_family(tmp_path):
    data = small_config(shapes=["1024x1024x1024"], evaluator={"backend": "simulator"},
                        budget={"evaluations_per_shape": 12},
                        strategy={"name": "experiments.plugins.example_strategy:HillClimb", "params": {"explore": 0.2}})
    result, folder = campaign(tmp_path, data)
    assert result.states["1024x1024x1024"].evaluations == 12
    assert {o for (o,) in rows(folder, "SELECT DISTINCT operator FROM proposals")} == {"hill_climb"}


def test_a_plugin_family_named_twice_is_one_family(user_family):
    plugins = make_plugins([user_family, user_family])
    assert plugins.families.resolve(user_family) is plugins.families.resolve("my_sm90")
    data = small_config(families=[user_family, "my_sm90"])
    config = parse_campaign(data)
    assert config.families == [user_family, "my_sm90"]


USER_OPERATOR_AND_POLICY = '''
"""A user's own operator and selection policy, in a module outside evogemm."""
import random

from evolution.policy_base import OperatorPolicy, sample_index
from genome import Offspring


class Swap:
    """Swap the two schedules (a one-parameter operator)."""
    arity = 1

    def __init__(self, name="swap"):
        self.name = name

    def __call__(self, parents, ctx):
        p = parents[0]
        params = p.param_dict
        params["schedule"] = "pingpong" if params["schedule"] == "cooperative" else "cooperative"
        child = ctx.space.repair(type(p).make(p.family, params, p.patches), ctx.rng)
        return [Offspring(child, self.name, (p.id,), note="swapped the schedule")]


class FirstArmMostly(OperatorPolicy):
    """Picks the first arm with probability `share`, the others uniformly."""
    name = "first_arm_mostly"
    PARAMS = {"share": 0.7}

    def probabilities(self):
        rest = (1 - self.params["share"]) / max(1, len(self.arms) - 1)
        return {a: (self.params["share"] if i == 0 else rest) for i, a in enumerate(self.arms)}

    def _select(self, rng: random.Random):
        probs = self.probabilities()
        return self.arms[sample_index(rng, [probs[a] for a in self.arms])]
'''


def test_an_operator_and_a_policy_from_a_users_module_run_a_campaign(tmp_path, monkeypatch):
    root = tmp_path / "userpkg2"
    root.mkdir()
    (root / "my_search.py").write_text(textwrap.dedent(USER_OPERATOR_AND_POLICY))
    monkeypatch.syspath_prepend(str(root))
    data = small_config(shapes=["1024x1024x1024"], evaluator={"backend": "simulator"},
                        budget={"evaluations_per_shape": 30},
                        operators=[{"name": "my_search:Swap"}, {"name": "param_mutate"}],
                        selection={"policy": "my_search:FirstArmMostly", "params": {"share": 0.8}})
    result, folder = campaign(tmp_path, data)
    assert result.states["1024x1024x1024"].evaluations == 30
    ops = [o for (o,) in rows(folder, "SELECT operator FROM proposals WHERE arm IS NOT NULL")]
    assert "swap" in ops                                            # the user's operator made children
    (policy,) = {p for (p,) in rows(folder, "SELECT DISTINCT policy FROM policy_log")}
    assert policy == "my_search:FirstArmMostly"
    # the user's policy chose the arms: its probabilities are what the log records at every step
    for (probs,) in rows(folder, "SELECT probabilities FROM policy_log"):
        assert json.loads(probs) == pytest.approx({"my_search:Swap": 0.8, "param_mutate": 0.2})
