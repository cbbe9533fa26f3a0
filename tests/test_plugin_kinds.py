"""Plug-ins named in a campaign are checked for their kind by validation, against the registries
of evolution.plugins: a plug-in of the wrong kind is refused with one line that names the YAML key
(and its line); a plug-in of the right kind is accepted, its params checked against its constructor."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from experiments.schema import CampaignError, load_campaign, parse_campaign

REPO = Path(__file__).resolve().parents[1]

EX = "plugin_examples_for_schema"  # tests/plugin_examples_for_schema.py (tests/ is on sys.path)
HEAD = """\
name: x
shapes: [1024x1024x1024]
budget: {evaluations_per_shape: 8}
"""


def load(tmp_path: Path, body: str):
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + textwrap.dedent(body))
    return load_campaign(path)


def refused(tmp_path: Path, body: str) -> str:
    """The one error line of a campaign that must be refused for one reason."""
    with pytest.raises(CampaignError) as info:
        load(tmp_path, body)
    errors = info.value.errors
    assert len(errors) == 1, errors
    assert "\n" not in errors[0]
    return errors[0]


WRONG_KIND = [
    ("strategy: os.path:join", "strategy.name: 'os.path:join' is not allowed: search strategy plug-in",
     "is a function, not a class with ask"),
    ('evaluator: {backend: "math:pi"}', "evaluator.backend: 'math:pi' is not allowed: evaluator backend plug-in",
     "is a float"),
    ('families: ["os.path:join"]', "families[0]: 'os.path:join' is not allowed: template family plug-in",
     "give a TemplateFamily"),
    ('selection: {policy: "os.path:join"}', "selection.policy: 'os.path:join' is not allowed: selection policy plug-in",
     "is a function, not a class with choose"),
    ('operators: [{name: "os.path:join"}]', "operators[0].name: 'os.path:join' is not allowed: operator plug-in",
     "is a function, not an operator class"),
    ('selection: {parents: {name: "os.path:join"}}',
     "selection.parents.name: 'os.path:join' is not allowed: parent selection plug-in", "not a class with select"),
    ('llm: {providers: [{name: a, kind: "os.path:join", model: m}]}',
     "llm.providers[0].kind: 'os.path:join' is not allowed: LLM provider plug-in", "not a class with complete"),
    (f'strategy: "{EX}:TinyPolicy"', f"strategy.name: '{EX}:TinyPolicy' is not allowed: search strategy plug-in",
     "class TinyPolicy has no ask(), tell()"),
    (f'evaluator: {{backend: "{EX}:NOT_A_CLASS"}}', "evaluator.backend:", "is a int"),
]


@pytest.mark.parametrize("body,start,why", WRONG_KIND, ids=[w[0].split(":")[0] for w in WRONG_KIND])
def test_wrong_kind_is_refused_with_one_line_naming_the_key(tmp_path, body, start, why):
    line = refused(tmp_path, body)
    assert line.startswith(start), line
    assert why in line
    assert line.endswith("(line 4)")  # the line of the key in the YAML file


def test_wrong_kind_is_refused_by_parse_campaign_too():
    data = {"name": "x", "shapes": ["64x64x64"], "budget": {"evaluations_per_shape": 4}, "strategy": "os.path:join"}
    with pytest.raises(CampaignError) as info:
        parse_campaign(data)
    assert info.value.errors == ["strategy.name: 'os.path:join' is not allowed: search strategy plug-in "
                                 "'os.path:join' is a function, not a class with ask(), tell()"]


def test_unknown_names_list_the_registry(tmp_path):
    line = refused(tmp_path, "selection: {policy: greedy}")
    assert line.startswith("selection.policy: 'greedy' is not allowed: unknown selection policy 'greedy'; "
                           "known: softmax_pg, thompson, ucb, uniform")
    line = refused(tmp_path, "selection: {parents: {name: best}}")
    assert "known: fitness_novelty, uniform" in line
    line = refused(tmp_path, "strategy: cmaes")
    assert "known: evolution, optuna_tpe, random" in line
    line = refused(tmp_path, "evaluator: {backend: cuda}")
    assert line.startswith("evaluator.backend: 'cuda' is not allowed: unknown evaluator backend 'cuda'; "
                           "known: auto, gpu, ray, simulator")


def test_a_plugin_module_that_fails_on_import_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "broken_plugin_mod.py").write_text("raise RuntimeError('boom\\nsecond line')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    line = refused(tmp_path, "strategy: broken_plugin_mod:Anything")
    assert line.startswith("strategy.name: 'broken_plugin_mod:Anything' is not allowed: importing module "
                           "'broken_plugin_mod' for plug-in 'broken_plugin_mod:Anything' failed: RuntimeError: boom "
                           "second line")
    line = refused(tmp_path, "strategy: no_such_module_anywhere:Anything")
    assert "cannot import module 'no_such_module_anywhere'" in line
    # outside a campaign file too (space, render, bench name families by import path): one line, exit 2
    (tmp_path / "syntax_plugin_mod.py").write_text("def f(:\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])}
    for module, what in (("broken_plugin_mod", "RuntimeError: boom"), ("syntax_plugin_mod", "SyntaxError")):
        proc = subprocess.run([sys.executable, "-m", "experiments.cli", "space", f"{module}:FAMILY"], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"importing module '{module}'" in proc.stderr and what in proc.stderr


def test_right_kind_plugins_are_accepted(tmp_path):
    config = load(tmp_path, f"""\
        families: [sm90_cutlass, "templates.sm90_cutlass:FAMILY"]
        operators:
          - {{name: param_mutate}}
          - {{name: "{EX}:NoOpOperator", params: {{strength: 3}}}}
        selection:
          policy: "{EX}:TinyPolicy"
          params: {{greed: 0.2}}
          parents: {{name: "{EX}:FirstParents", params: {{offset: 1}}}}
        strategy: {{name: "{EX}:TinyStrategy", params: {{batch: 2}}}}
        llm: {{providers: [{{name: echo, kind: "{EX}:EchoProvider", model: m}}]}}
        evaluator: {{backend: "{EX}:NullEvaluator", options: {{scale: 2.0}}}}
    """)
    assert config.strategy.name == f"{EX}:TinyStrategy" and config.strategy.params == {"batch": 2}
    assert config.selection.policy == f"{EX}:TinyPolicy" and config.selection.params == {"greed": 0.2}
    assert config.selection.parents.name == f"{EX}:FirstParents"
    assert config.selection.parents.params == {"offset": 1}
    assert [op.arm_name for op in config.operators] == ["param_mutate", f"{EX}:NoOpOperator"]
    assert config.llm.providers[0].kind == f"{EX}:EchoProvider"
    assert config.evaluator.backend == f"{EX}:NullEvaluator" and config.evaluator.options == {"scale": 2.0}
    assert config.families == ["sm90_cutlass", "templates.sm90_cutlass:FAMILY"]


@pytest.mark.parametrize("body,start,why", [
    (f'strategy: {{name: "{EX}:TinyStrategy", params: {{size: 3}}}}', "strategy.params:", "no parameter 'size'"),
    (f'selection: {{policy: "{EX}:TinyPolicy", params: {{greed: 2}}}}', "selection.params:",
     "greed must be in [0, 1]"),
    (f'selection: {{policy: "{EX}:TinyPolicy", params: {{sigma: 1}}}}', "selection.params:", "no parameter 'sigma'"),
    (f'selection: {{parents: {{name: "{EX}:FirstParents", params: {{offset: -1}}}}}}', "selection.parents.params:",
     "offset must be >= 0"),
    (f'selection: {{parents: {{name: "{EX}:FirstParents", params: {{temperature: 1}}}}}}',
     "selection.parents.params:", "no parameter 'temperature'; allowed: offset"),
    (f'operators: [{{name: "{EX}:NoOpOperator", params: {{power: 1}}}}]', "operators[0].params:",
     "no parameter 'power'"),
    (f'evaluator: {{backend: "{EX}:NullEvaluator", options: {{bogus: 1}}}}', "evaluator.options:",
     "no parameter 'bogus'; allowed: scale"),
    ("evaluator: {backend: simulator, options: {log_dir: /tmp}}", "evaluator.options:",
     "takes no option 'log_dir'; allowed: calibration, device, noise, seed"),
])
def test_plugin_params_are_checked_against_the_constructor(tmp_path, body, start, why):
    line = refused(tmp_path, body)
    assert line.startswith(start), line
    assert why in line, line


def test_parent_selection_forms(tmp_path):
    default = load(tmp_path, "")
    assert default.selection.parents.name == "fitness_novelty" and default.selection.parents.params == {}
    new = load(tmp_path, "selection: {parents: {name: fitness_novelty, params: {fitness_weight: 1.0, "
                         "novelty_weight: 0.3, temperature: 0.5}}}")
    assert new.selection.parents.params == {"fitness_weight": 1.0, "novelty_weight": 0.3, "temperature": 0.5}
    # the older flat form (campaign folders made before parent selection was a plug-in) still loads
    old = load(tmp_path, "selection: {parents: {fitness_weight: 1.0, novelty_weight: 0.1, temperature: 0.5}}")
    assert old.selection.parents.name == "fitness_novelty"
    assert old.selection.parents.params == {"fitness_weight": 1.0, "novelty_weight": 0.1, "temperature": 0.5}
    assert load(tmp_path, "selection: {parents: uniform}").selection.parents.name == "uniform"
    line = refused(tmp_path, "selection: {parents: {temperature: 0}}")
    assert line.startswith("selection.parents.params:") and "temperature must be > 0" in line
    line = refused(tmp_path, "selection: {parents: {name: uniform, params: {temperature: 1}}}")
    assert "parent selection 'uniform' has no parameter 'temperature'" in line


def test_stored_config_with_flat_parents_reloads(tmp_path):
    config = load(tmp_path, "selection: {parents: {novelty_weight: 0.2}}")
    stored = config.resolved()
    assert stored["selection"]["parents"] == {"name": "fitness_novelty", "params": {"novelty_weight": 0.2}}
    stored["selection"]["parents"] = {"fitness_weight": 1.0, "novelty_weight": 0.2, "temperature": 0.5}
    again = parse_campaign(stored, stored=True)
    assert again.selection.parents.params["novelty_weight"] == 0.2


def test_a_plugin_family_is_checked_when_validated(tmp_path):
    line = refused(tmp_path, f'families: [sm90_cutlass, "{EX}:NoOpOperator"]')
    assert line.startswith(f"families[1]: '{EX}:NoOpOperator' is not allowed: template family plug-in")
    line = refused(tmp_path, "families: [sm100_nope]")
    assert line.startswith("families[0]: 'sm100_nope' is not allowed: unknown template family 'sm100_nope'; "
                           "known: skinny_mma, skinny_tma, sm80_cutlass, sm90_cpasync, sm90_cutlass, sm90_lean, sm90_padded, sm90_splitk, "
                           "sm90_swapab")
