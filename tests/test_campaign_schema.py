"""Campaign YAML schema: good files parse; every kind of bad input gets a one-line message that
names the key path, the value and what is allowed."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from experiments.schema import CampaignError, load_campaign, parse_campaign

REPO = Path(__file__).resolve().parent.parent
CAMPAIGNS = REPO / "experiments" / "campaigns"


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def errors_of(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(CampaignError) as info:
        load_campaign(write(tmp_path, text))
    return info.value.errors


GOOD = """
    name: good
    seed: 4
    shapes: ["1024x1024x1024", [128, 4096, 4096], "2048,2048,2048"]
    budget: {evaluations_per_shape: 32, wall_seconds: 60}
    population: {size: 8, islands: 3, offspring: 2}
    operators:
      - {name: param_mutate, prior: 2.0, params: {n_changes: 2}}
      - {name: param_crossover}
      - {name: "genome.operators:RandomSample", arm: sampler}
    selection: {policy: thompson, failure_reward: -0.5, parents: {novelty_weight: 0.1}}
    strategy: {name: optuna_tpe, params: {n_startup_trials: 4}}
    llm:
      providers: [{name: local, kind: "plugin_examples_for_schema:EchoProvider", model: qwen,
                   base_url: "http://127.0.0.1:8000/v1", api_key_env: MY_KEY}]
    evaluator: {backend: simulator, batch_size: 4, noise: 0.01, timing: {repeats: 7}}
"""


def test_good_campaign_parses(tmp_path):
    config = load_campaign(write(tmp_path, GOOD))
    assert [p.name for p in config.problems] == ["1024x1024x1024", "128x4096x4096", "2048x2048x2048"]
    assert config.budget.wall_seconds == 60 and config.budget.total_evaluations is None
    assert config.population.islands == 3 and config.population.offspring_per_island == 2
    assert [op.arm_name for op in config.operators] == ["param_mutate", "param_crossover", "sampler"]
    assert config.strategy.name == "optuna_tpe" and config.strategy.params == {"n_startup_trials": 4}
    assert config.selection.parents.name == "fitness_novelty"
    assert config.selection.parents.params == {"novelty_weight": 0.1}
    assert config.llm.providers[0].api_key_env == "MY_KEY"
    assert config.evaluator.timing == {"repeats": 7}
    assert config.families == ["sm90_cutlass"]
    resolved = config.resolved()
    assert resolved["shapes"] == ["1024x1024x1024", "128x4096x4096", "2048x2048x2048"]
    # the resolved form is itself a valid campaign that means the same thing
    again = parse_campaign(resolved)
    assert again.problems == config.problems and again.seed == 4


def test_unknown_key_lists_allowed_keys(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        population: {sise: 4}
    """)
    assert len(errs) == 1
    assert errs[0].startswith("population.sise: unknown key; allowed: size, islands, offspring,")
    assert "migration_interval" in errs[0] and "elite" in errs[0]
    top = errors_of(tmp_path, "name: x\nshapes: [1024x1024x1024]\nbudget: {evaluations_per_shape: 8}\nbugdet: 3\n")
    assert top[0].startswith("bugdet: unknown key; allowed: name, description, seed,")


def test_a_yes_or_no_is_not_a_number(tmp_path):
    """pydantic takes true as 1: `seed: true` ran seed 1 and `evaluations_per_shape: true` one evaluation."""
    errs = errors_of(tmp_path, """
        name: x
        seed: true
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: true, gpu_seconds: false}
        population: {size: true, handpicked: false}
    """)
    for key in ("seed", "budget.evaluations_per_shape", "budget.gpu_seconds", "population.size"):
        assert any(e.startswith(f"{key}: ") and "is not a number" in e for e in errs), (key, errs)
    assert len(errs) == 4, errs  # a yes-or-no setting still takes one


def test_bad_value_says_what_is_allowed(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        population: {size: -3}
        selection: {policy: greedy}
        evaluator: {backend: cuda}
    """)
    assert errs[0].startswith("population.size: -3 is not allowed: must be >= 2")
    assert any(e.startswith("selection.policy: 'greedy' is not allowed: unknown selection policy 'greedy'; "
                            "known: softmax_pg, thompson, ucb, uniform") for e in errs)
    assert any(e.startswith("evaluator.backend: 'cuda' is not allowed: unknown evaluator backend 'cuda'; "
                            "known: auto, gpu, ray, simulator") for e in errs)
    # each error carries the YAML line it comes from
    assert errs[0].endswith("(line 5)")


def test_bad_shape_strings(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: ["1024x1024x1024", "12x", [1, 2], "0x5x5"]
        budget: {evaluations_per_shape: 8}
    """)
    assert errs[0].startswith("shapes[1]: '12x' is not allowed: cannot read shape '12x'; write it as MxNxK")
    assert errs[1].startswith("shapes[2]: [1, 2] is not allowed: a shape is [M, N, K]")
    assert errs[2].startswith("shapes[3]: '0x5x5' is not allowed: problem M must be positive")


def test_missing_or_empty_budget(tmp_path):
    errs = errors_of(tmp_path, "name: x\nshapes: [1024x1024x1024]\n")
    assert errs == ["budget: required key is missing"]
    errs = errors_of(tmp_path, "name: x\nshapes: [1024x1024x1024]\nbudget: {gpu_seconds: null}\n")
    assert errs[0].startswith("budget: no limit is set: set at least one of evaluations_per_shape, "
                              "total_evaluations, gpu_seconds, wall_seconds, llm_tokens")


def test_yaml_syntax_error_gives_the_line(tmp_path):
    path = write(tmp_path, "name: x\nbudget:\n  evaluations_per_shape: 3\n population: 4\n")
    with pytest.raises(CampaignError) as info:
        load_campaign(path)
    assert f"{path}:4:" in str(info.value) and "YAML syntax error" in str(info.value)
    dup = write(tmp_path, "name: x\nname: y\nshapes: [1024x1024x1024]\nbudget: {evaluations_per_shape: 3}\n", "d.yaml")
    with pytest.raises(CampaignError) as info:
        load_campaign(dup)
    assert "found the key 'name' twice" in str(info.value) and f"{dup}:2:" in str(info.value)


def test_the_llm_operators_are_known_and_an_unknown_llm_operator_is_refused(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        operators: [{name: llm_dream, model: local}]
        llm: {providers: [{name: local, kind: "plugin_examples_for_schema:EchoProvider", model: m}]}
    """)
    assert len(errs) == 1
    assert errs[0].startswith("operators[0].name: 'llm_dream' is not allowed: LLM operator 'llm_dream' is not "
                              "available; available: ")
    for name in ("llm_param", "llm_patch", "llm_fix", "llm_crossover"):
        assert name in errs[0]
    config = load_campaign(write(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        operators:
          - {name: llm_patch, model: local, params: {blocks: [tile_config, mainloop], retries: 2}}
          - {name: llm_fix, model: local}
          - {name: llm_crossover, model: local}
        llm: {providers: [{name: local, kind: "plugin_examples_for_schema:EchoProvider", model: m}]}
    """, "ok.yaml"))
    assert [o.arm_name for o in config.operators] == ["llm_patch@local", "llm_fix@local", "llm_crossover@local"]
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        operators: [{name: llm_patch, model: local, params: {blocks: [abi]}}]
        llm: {providers: [{name: local, kind: "plugin_examples_for_schema:EchoProvider", model: m}]}
    """)
    assert len(errs) == 1 and "may never be patched" in errs[0]


def test_operator_params_and_arms_and_models(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        operators:
          - {name: param_mutate, params: {n_changes: 0}}
          - {name: param_mutate, params: {bogus: 1}}
          - {name: "nosuchpkg.mod:Factory"}
    """)
    assert errs[0].startswith("operators[0].params: {\"n_changes\": 0} is not allowed: param_mutate: n_changes must")
    assert errs[1].startswith("operators[1].params:") and "bogus" in errs[1]
    assert errs[2].startswith("operators[2].name: 'nosuchpkg.mod:Factory' is not allowed: cannot import module")
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        operators: [{name: param_mutate}, {name: param_mutate}]
    """)
    assert errs[0].startswith("operators: operator arms must be unique; repeated: param_mutate")
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        operators: [{name: "genome.operators:ParamMutate", model: gpt}]
    """)
    assert errs[0].startswith("operators[0].model: 'gpt' is not allowed: names no llm provider; allowed: (no llm")


def test_provider_validation(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        llm:
          providers:
            - {name: a, kind: hf, model: m, api_key_env: "sk-secret", base_url: "ftp://x"}
    """)
    joined = "\n".join(errs)
    assert "llm.providers[0].kind: 'hf' is not allowed: unknown LLM provider 'hf'" in joined
    assert "llm.providers[0].api_key_env: 'sk-secret' is not allowed: must be the name of an environment variable" in joined
    assert "llm.providers[0].base_url: 'ftp://x' is not allowed: must start with http:// or https://" in joined


def test_shapes_or_suite_exactly_one(tmp_path):
    errs = errors_of(tmp_path, "name: x\nbudget: {evaluations_per_shape: 8}\n")
    assert errs[0].startswith("(top level): give exactly one of 'shapes'") or "exactly one of 'shapes'" in errs[0]


def test_suite_relative_path_groups_and_upward_search(tmp_path):
    # the shipped campaign: the repository's copy of the public suite
    config = load_campaign(CAMPAIGNS / "h200-public.yaml")
    assert len(config.problems) == 28 and config.evaluator.backend == "gpu"
    # a campaign elsewhere finds shared/suites/public.yaml by searching upward
    shared = REPO / "experiments" / "suites" / "public.yaml"
    (tmp_path / "shared" / "suites").mkdir(parents=True)
    shutil.copy(shared, tmp_path / "shared" / "suites" / "public.yaml")
    deep = tmp_path / "checkout" / "experiments" / "campaigns"
    deep.mkdir(parents=True)
    text = (CAMPAIGNS / "h200-public.yaml").read_text().replace("suite: ../suites/public.yaml",
                                                                "suite: ../shared/suites/public.yaml")
    assert "suite: ../shared/suites/public.yaml" in text
    (deep / "h.yaml").write_text(text)
    config = load_campaign(deep / "h.yaml")
    assert config.suite is not None and Path(config.suite.path) == (tmp_path / "shared/suites/public.yaml").resolve()
    assert len(config.problems) == 28
    # groups
    (deep / "g.yaml").write_text(text.replace("suite: ../shared/suites/public.yaml",
                                              "suite: {path: ../shared/suites/public.yaml, groups: [odd]}"))
    assert [p.name for p in load_campaign(deep / "g.yaml").problems] == ["4000x4096x4096", "1000x1000x1000",
                                                                         "96x3072x768"]
    (deep / "b.yaml").write_text(text.replace("suite: ../shared/suites/public.yaml",
                                              "suite: {path: ../shared/suites/public.yaml, groups: [odd, nope]}"))
    with pytest.raises(CampaignError) as info:
        load_campaign(deep / "b.yaml")
    assert info.value.errors[0].startswith("suite.groups:") and "groups: grid, llm, odd" in info.value.errors[0]
    (deep / "m.yaml").write_text(text.replace("../shared/suites/public.yaml", "../shared/suites/missing.yaml"))
    with pytest.raises(CampaignError) as info:
        load_campaign(deep / "m.yaml")
    assert info.value.errors[0].startswith("suite.path:") and "not found" in info.value.errors[0]


def test_shipped_campaigns_validate():
    for path in sorted(CAMPAIGNS.glob("*.yaml")):
        config = load_campaign(path)
        assert config.problems, path
    quick = load_campaign(CAMPAIGNS / "quickstart.yaml")
    assert 3 <= len(quick.problems) <= 4 and quick.evaluator.backend in ("simulator", "auto")


def test_overrides_are_validated_too(tmp_path):
    path = write(tmp_path, GOOD)
    config = load_campaign(path, {"seed": 11, "evaluator.backend": "gpu"})
    assert config.seed == 11 and config.evaluator.backend == "gpu"
    with pytest.raises(CampaignError) as info:
        load_campaign(path, {"seed": -1})
    assert info.value.errors[0].startswith("seed: -1 is not allowed: must be >= 0")


def test_policy_and_strategy_params_are_checked(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        selection: {policy: thompson, params: {sigma: -1, foo: 2}, reward: best}
        strategy: {name: optuna_tpe, params: {n_startup: 3}}
    """)
    joined = "\n".join(errs)
    assert "selection.params:" in joined and "foo" in joined
    assert "selection.reward: 'best' is not allowed: allowed: log_ratio, improvement, success" in joined
    assert "strategy.params:" in joined and "n_startup" in joined
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        strategy: {name: evolution, params: {size: 3}}
    """)
    assert errs[0].startswith("strategy.params:") and "must be empty" in errs[0]


def test_bundled_suite_matches_the_shared_one():
    shared = REPO.parent / "shared" / "suites" / "public.yaml"
    if not shared.exists():
        pytest.skip("no ../shared/suites/public.yaml beside this checkout")
    bundled = REPO / "experiments" / "suites" / "public.yaml"
    assert yaml.safe_load(bundled.read_text()) == yaml.safe_load(shared.read_text())


def test_the_correctness_gate_cannot_be_loosened(tmp_path):
    head = "name: x\nshapes: [1024x1024x1024]\nbudget: {evaluations_per_shape: 8}\n"
    for body, key in [("evaluator: {backend: gpu, timing: {tolerance: 0.01}}", "evaluator.timing.tolerance"),
                      ("evaluator: {backend: simulator, timing: {seeds: 1}}", "evaluator.timing.seeds"),
                      ("evaluator: {backend: gpu, options: {timing: {tolerance: 1.0}}}",
                       "evaluator.options.timing.tolerance")]:
        errs = errors_of(tmp_path, head + body + "\n")
        assert len(errs) == 1, errs
        assert errs[0].startswith(f"{key}: ") and "the correctness gate cannot be loosened" in errs[0], errs[0]
        assert errs[0].endswith("(line 4)")
    # the same through a command-line override of a good file
    with pytest.raises(CampaignError) as info:
        load_campaign(write(tmp_path, GOOD), {"evaluator.timing": {"tolerance": 2e-3}})
    assert "the correctness gate cannot be loosened" in str(info.value)
    # stricter is allowed: a smaller tolerance, more seeds
    config = load_campaign(write(tmp_path, head + "evaluator: {backend: gpu, timing: {tolerance: 5.0e-4, seeds: 5}}\n"))
    assert config.evaluator.timing == {"tolerance": 5e-4, "seeds": 5}
    from evaluator.gpu_worker import TIMING_DEFAULTS  # the floor is the worker's own default
    at_floor = f"evaluator: {{timing: {{tolerance: {TIMING_DEFAULTS['tolerance']}, seeds: {TIMING_DEFAULTS['seeds']}}}}}\n"
    assert load_campaign(write(tmp_path, head + at_floor)).evaluator.timing["tolerance"] == TIMING_DEFAULTS["tolerance"]


def test_evaluator_options_a_backend_does_not_take_are_refused(tmp_path):
    errs = errors_of(tmp_path, "name: x\nshapes: [1024x1024x1024]\nbudget: {evaluations_per_shape: 8}\n"
                               "evaluator: {backend: simulator, options: {jobs: 4}}\n")
    assert errs == ["evaluator.options: {\"jobs\": 4} is not allowed: evaluator backend 'simulator' takes no option "
                    "'jobs'; allowed: calibration, device, noise, seed (line 4)"]


UNREADABLE_FILES = [  # (content, what the one-line error says); the CLI tests use them too
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not a UTF-8 text file"),
    (b"name: x\x00\x00\x01\x02", "a binary file (NUL byte at offset 7)"),
    (b"name: x\nbell: \x07\n", "not a YAML text file"),
    ("name: caf\u00e9\n".encode("latin-1"), "not a UTF-8 text file"),
    (b"just some words, not a campaign\n", "a campaign is a mapping of keys"),
    (b"- 1\n- 2\n", "a campaign is a mapping of keys (name, budget, shapes, ...), got list"),
    (b"{{{ not: [yaml\n", "YAML syntax error"),
    (b"", "the file is empty"),
]


@pytest.mark.parametrize("content,why", UNREADABLE_FILES)
def test_unreadable_campaign_files_name_the_file(tmp_path, content, why):
    path = tmp_path / "weird.yaml"
    path.write_bytes(content)
    with pytest.raises(CampaignError) as info:
        load_campaign(path)
    text = str(info.value)
    assert text.startswith(str(path)), text
    assert why in text and "\n" not in text
    with pytest.raises(CampaignError) as info:
        load_campaign(tmp_path)
    assert str(info.value).startswith(str(tmp_path)) and "is a folder" in str(info.value)


def test_family_prune_ratio_must_exceed_one(tmp_path):
    errs = errors_of(tmp_path, """
        name: x
        shapes: [1024x1024x1024]
        budget: {evaluations_per_shape: 8}
        population: {size: 4, family_prune_ratio: 0.5}
    """)
    assert errs[0].startswith("population.family_prune_ratio: 0.5 is not allowed: must be > 1")
