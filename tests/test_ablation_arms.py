"""The mixed-quality LLM arms ablation (experiments/ablation_arms.py), small and fast: the scripted
models answer llm_param prompts as their quality says, deterministically from the seed, and a
two-seed run credits every arm, gives the broken arm -1 and the fewest pulls under the bandit; with
`--broken misleading` the bad arm's answers are valid but slow moves, each one an evaluation.
(The figure itself, RL vs uniform over 5 seeds, is in docs/results/ablation-llm-arms.md.)"""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from evaluator.simulator import SimulatedEvaluator
from evolution.db import CampaignDB
from experiments.ablation_arms import ScriptedModel, read_prompt, run_arms_ablation
from genome import OperatorContext, OperatorError, Problem
from llm_mutators.chat import ProviderError
from llm_mutators.param_op import LlmParam
from templates import get_space

PROBLEM = Problem(1024, 1024, 1024)


def _prompts(n: int):
    space = get_space("sm90_cutlass")
    rng = random.Random(3)
    op = LlmParam(model="m")
    out = []
    while len(out) < n:
        parent = space.sample(rng)
        if space.is_valid(parent, PROBLEM):
            ctx = OperatorContext(space=space, problem=PROBLEM, rng=random.Random(0))
            out.append((parent, ctx, op.messages(parent, ctx)))
    return op, out


def test_the_prompt_is_read_back_and_answers_are_deterministic_from_the_seed():
    op, [(parent, ctx, msgs)] = _prompts(1)
    family, problem, params = read_prompt("\n".join(m["content"] for m in msgs))
    assert (family, problem, params) == ("sm90_cutlass", PROBLEM, parent.param_dict)
    with pytest.raises(ProviderError, match="not an llm_param prompt"):
        ScriptedModel("g", "good", quality="good").complete([{"role": "user", "content": "hello"}])
    with pytest.raises(ValueError, match="quality must be one of"):
        ScriptedModel("x", "x", quality="excellent")
    a, b = ScriptedModel("m", "m", seed=1), ScriptedModel("m", "m", seed=1)
    first = [a.complete(msgs).text for _ in range(3)]
    assert first == [b.complete(msgs).text for _ in range(3)]      # same seed, same answers, in order
    assert len(set(first)) > 1                                     # a repeated request is a new draw
    assert ScriptedModel("m", "m", seed=1).complete(msgs, seed=9).text != first[0] or \
        ScriptedModel("m", "m", seed=1).complete(msgs, seed=10).text != first[0]   # a call's seed counts


def test_good_moves_beat_their_parent_more_often_than_mediocre_ones_and_broken_answers_are_refused():
    op, cases = _prompts(25)
    sim = SimulatedEvaluator()
    wins = {"good": 0, "mediocre": 0}
    for quality in wins:
        model = ScriptedModel(quality, quality, quality=quality, seed=2)
        for parent, ctx, msgs in cases:
            child, reason = op.parse(model.complete(msgs).text, parent, ctx)      # a valid move of the parent
            assert child.id != parent.id and ctx.space.is_valid(child, PROBLEM) and quality in reason
            wins[quality] += sim.predict_us(child, PROBLEM) < sim.predict_us(parent, PROBLEM)
    assert wins["good"] >= 0.6 * len(cases) and wins["good"] > wins["mediocre"] + 3
    broken = ScriptedModel("b", "b", quality="broken", seed=2)
    for parent, ctx, msgs in cases:
        with pytest.raises(OperatorError):
            op.parse(broken.complete(msgs).text, parent, ctx)


def test_misleading_moves_are_valid_and_slower_than_their_parent_in_most_pulls():
    op, cases = _prompts(25)
    sim = SimulatedEvaluator()
    model = ScriptedModel("misleading", "misleading", quality="misleading", seed=2)
    slower = 0
    for parent, ctx, msgs in cases:
        text = model.complete(msgs).text
        child, reason = op.parse(text, parent, ctx)                    # accepted: it will cost an evaluation
        assert child.id != parent.id and ctx.space.is_valid(child, PROBLEM) and "misleading" in reason
        slower += sim.predict_us(child, PROBLEM) > sim.predict_us(parent, PROBLEM)
        again = ScriptedModel("misleading", "misleading", quality="misleading", seed=2)
        assert again.complete(msgs).text == text                      # deterministic from the seed
    assert slower >= 0.8 * len(cases)
    # the mirror of `good`: with the same generator both draw the same 8 candidate moves; good
    # answers the fastest of them, misleading the slowest
    parent, ctx, _ = cases[0]
    picks = []
    for quality in ("good", "misleading"):
        m = ScriptedModel("m", "m", quality=quality, seed=5, candidates=8)
        answer = m._move("sm90_cutlass", PROBLEM, parent.param_dict, random.Random(11))
        picks.append(op.parse(json.dumps(answer), parent, ctx)[0])
    times = [sim.predict_us(g, PROBLEM) for g in picks]
    assert times[0] < times[1]                                         # fastest vs slowest of the same 8 moves


def test_a_small_ablation_credits_every_arm_and_the_bandit_starves_the_broken_one(tmp_path):
    result = run_arms_ablation(seeds=2, out_dir=tmp_path, budget=60, shapes=["1024x1024x1024"], jobs=1)
    runs = result["runs"]
    assert sorted((r["variant"], r["seed"]) for r in runs) == [("rl", 0), ("rl", 1), ("uniform", 0), ("uniform", 1)]
    for r in runs:
        arms = r["arms"]["1024x1024x1024"]
        assert set(arms) == {"llm_param@good", "llm_param@mediocre", "llm_param@broken", "param_mutate"}
        assert all(s["pulls"] > 0 for s in arms.values())                         # every arm was tried
        broken = arms["llm_param@broken"]
        assert broken["mean_reward"] == -1.0 and broken["children"] == 0
        assert len(r["shapes"]["1024x1024x1024"]["curve"]) == 60
        conn = sqlite3.connect(f"{r['folder']}/campaign.db")
        models = dict(conn.execute("SELECT model, COUNT(*) FROM llm_calls GROUP BY model").fetchall())
        conn.close()
        # every pull of an LLM arm is a recorded call (a call whose child was a genome already
        # proposed is not credited, so there may be more calls than pulls)
        assert all(models[q] >= arms[f"llm_param@{q}"]["pulls"] for q in ("good", "mediocre", "broken"))
        if r["variant"] == "rl":
            assert broken["pulls"] == min(s["pulls"] for s in arms.values())
            # by the end of the shape the policy prefers the good arm (its pulls lag: a round of 12
            # children is planned before any of them is measured, and 36 children are 3 rounds)
            db = CampaignDB(f"{r['folder']}/campaign.db", readonly=True)
            probs = db.policy_log("1024x1024x1024")[-1]["probabilities"]
            db.close()
            assert max(probs, key=probs.get) == "llm_param@good" and probs["llm_param@good"] > 0.5
    split = result["summary"]["split"]
    assert split["rl"]["llm_param@broken"]["pull_share"] < split["uniform"]["llm_param@broken"]["pull_share"]
    rows = result["summary"]["rows"]
    assert [(x["seed"], x["shape"]) for x in rows] == [(0, "1024x1024x1024"), (1, "1024x1024x1024")]
    assert all(0 < x["fraction"] <= 1 for x in rows)
    saved = json.loads((tmp_path / "ablation-arms.json").read_text())
    assert saved["summary"]["rows"] == rows and "| llm_param@broken |" in (tmp_path / "ablation-arms.md").read_text()


def test_the_cli_command_is_registered_and_refuses_bad_numbers(tmp_path):
    from experiments.ablation_arms_cli import _run_args
    from experiments.cli import build_parser
    args = build_parser().parse_args(["ablate-arms", "--out", str(tmp_path), "--seeds", "0"])
    assert args.func is _run_args
    with pytest.raises(ValueError, match="seeds must be a whole number >= 1"):
        args.func(args)


def test_the_rl_variant_takes_the_policy_its_params_and_the_reward_and_uniform_stays_the_baseline():
    from experiments.ablation_arms import RlSelection, campaign_dict
    from experiments.ablation_arms_cli import parse_params
    default = campaign_dict(0, "rl", 96, ["1024x1024x1024"])["selection"]
    assert (default["policy"], default["params"], default["reward"], default["failure_reward"],
            default["warm_start_weight"]) == ("thompson", {"sigma": 0.3}, "success", -1.0, 0.5)   # quickstart's
    assert RlSelection("ucb").resolved["params"] == {}           # quickstart's sigma would not fit UCB
    rl = RlSelection("softmax_pg", parse_params(["lr=0.1", "temperature=2"]), "log_ratio", -0.5, 0.0)
    sel = campaign_dict(0, "rl", 96, ["1024x1024x1024"], rl=rl)["selection"]
    assert sel == {"policy": "softmax_pg", "params": {"lr": 0.1, "temperature": 2}, "reward": "log_ratio",
                   "failure_reward": -0.5, "warm_start_weight": 0.0}
    assert campaign_dict(0, "uniform", 96, ["1024x1024x1024"], rl=rl)["selection"] == \
        campaign_dict(0, "uniform", 96, ["1024x1024x1024"])["selection"]       # the baseline never moves
    assert parse_params([]) is None
    for bad, match in ((dict(policy="ucb", params={"sigma": 1}), "no parameter 'sigma'"),
                       (dict(reward="speed"), "reward must be one of"), (dict(policy="uniform"), "learning policy"),
                       (dict(warm_start_weight=2.0), "warm_start_weight"), (dict(failure_reward=1.0), "<= 0")):
        with pytest.raises(ValueError, match=match):
            RlSelection(**bad)
    for bad in (["c"], ["c=fast"], ["=1"]):
        with pytest.raises(ValueError, match="--param"):
            parse_params(bad)


def test_the_cli_options_reach_the_rl_run(tmp_path):
    from experiments.cli import build_parser
    args = build_parser().parse_args(["ablate-arms", "--out", str(tmp_path), "--seeds", "1", "--budget", "36",
                                      "--shapes", "1024x1024x1024", "--policy", "ucb", "--param", "c=2.0",
                                      "--reward", "log_ratio"])
    assert args.func(args) == 0
    states = {}
    for variant in ("rl", "uniform"):
        db = CampaignDB(tmp_path / "runs" / f"{variant}-s0" / "campaign.db", readonly=True)
        states[variant] = db.policy_log("1024x1024x1024")[-1]["state"]
        db.close()
    assert states["rl"]["policy"] == "ucb" and states["rl"]["params"]["c"] == 2.0
    assert states["uniform"]["policy"] == "uniform"
    # log_ratio rewards: some successful child's reward is a log ratio, not the 0/1 of `success`
    sums = [s["reward_sum"] for s in states["rl"]["arm_stats"].values()]
    assert any(abs(x - round(x)) > 1e-6 for x in sums)
    meta = json.loads((tmp_path / "ablation-arms.json").read_text())["meta"]
    assert meta["variants"]["rl"]["policy"] == "ucb" and "ucb (c 2.0), reward log_ratio" in meta["rl_label"]


def test_a_tiny_misleading_ablation_runs_and_its_bad_arm_costs_evaluations_not_failures(tmp_path):
    from experiments.ablation_arms import campaign_dict
    from experiments.cli import build_parser
    shape = "1024x1024x1024"
    default = campaign_dict(0, "uniform", 48, [shape])
    assert [o.get("model") for o in default["operators"]] == ["good", "mediocre", "broken", None]   # garbage stays
    with pytest.raises(ValueError, match="broken must be one of garbage, misleading"):
        campaign_dict(0, "rl", 48, [shape], broken="slow")
    args = build_parser().parse_args(["ablate-arms", "--out", str(tmp_path), "--seeds", "1", "--budget", "48",
                                      "--shapes", shape, "--broken", "misleading"])
    assert args.func(args) == 0
    saved = json.loads((tmp_path / "ablation-arms.json").read_text())
    assert saved["meta"]["broken"] == "misleading" and len(saved["summary"]["rows"]) == 1
    for r in saved["runs"]:
        arms = r["arms"][shape]
        assert set(arms) == {"llm_param@good", "llm_param@mediocre", "llm_param@misleading", "param_mutate"}
        bad = arms["llm_param@misleading"]
        if r["variant"] == "uniform":
            assert bad["children"] > 0                                  # its answers were evaluated
        # no answer was refused: the arm is never credited a failure, and its children rarely win
        assert bad["mean_reward"] is None or 0 <= bad["mean_reward"] < arms["llm_param@good"]["mean_reward"]
        db = CampaignDB(f"{r['folder']}/campaign.db", readonly=True)
        failures = [f for f in db.operator_failures(shape) if f["arm"] == "llm_param@misleading"]
        db.close()
        assert failures == [] and len(r["shapes"][shape]["curve"]) == 48
    assert "bad model: misleading" in (tmp_path / "ablation-arms.md").read_text()


def test_parent_params_go_to_both_variants_and_the_oracle_always_picks_the_good_arm(tmp_path):
    from experiments.ablation_arms import RlSelection, campaign_dict
    from experiments.oracle_policy import GoodArmOracle
    shape = "1024x1024x1024"
    assert "parents" not in campaign_dict(0, "rl", 48, [shape])["selection"]          # default: untouched
    for variant in ("rl", "uniform"):
        sel = campaign_dict(0, variant, 48, [shape], parents={"temperature": 0.25})["selection"]
        assert sel["parents"] == {"name": "fitness_novelty", "params": {"temperature": 0.25}}
    arms = ["llm_param@mediocre", "llm_param@good", "param_mutate"]
    oracle = GoodArmOracle(arms)
    rng = random.Random(0)
    assert {oracle.choose(rng) for _ in range(20)} == {"llm_param@good"}
    assert oracle.probabilities()["llm_param@good"] == 1.0
    rl = RlSelection("experiments.oracle_policy:GoodArmOracle")
    args = ["ablate-arms", "--out", str(tmp_path), "--seeds", "1", "--budget", "36", "--shapes", shape,
            "--policy", rl.policy, "--parent-param", "temperature=0.25"]
    from experiments.cli import build_parser
    parsed = build_parser().parse_args(args)
    assert parsed.func(parsed) == 0
    saved = json.loads((tmp_path / "ablation-arms.json").read_text())
    assert saved["meta"]["parents"] == {"temperature": 0.25}
    rl_arms = next(r for r in saved["runs"] if r["variant"] == "rl")["arms"][shape]
    assert {a for a, s in rl_arms.items() if s["children"]} == {"llm_param@good"}


def test_the_good_model_with_jumps_also_weighs_genomes_from_the_whole_space_and_both_bad_models_can_run():
    from experiments.ablation_arms import campaign_dict
    op, cases = _prompts(12)
    with pytest.raises(ValueError, match="jumps must be a whole number >= 0"):
        ScriptedModel("g", "good", quality="good", jumps=-1)
    assert ScriptedModel("m", "m", quality="mediocre", jumps=8).jumps == 0        # only the good model jumps
    local, jumping = ScriptedModel("g", "good", quality="good", seed=4), \
        ScriptedModel("g", "good", quality="good", seed=4, jumps=16)
    sim, faster, far = SimulatedEvaluator(), 0, 0
    for parent, ctx, msgs in cases:
        a, b = (op.parse(m.complete(msgs).text, parent, ctx)[0] for m in (local, jumping))
        ta, tb = sim.predict_us(a, PROBLEM), sim.predict_us(b, PROBLEM)
        faster += tb <= ta
        far += sum(parent.param_dict.get(k) != v for k, v in b.param_dict.items()) > 3   # more than a local move
    assert faster >= 10 and far >= 1
    shape = "1024x1024x1024"
    both = campaign_dict(0, "rl", 48, [shape], broken="both", jumps=8)
    assert [o.get("model") for o in both["operators"]] == ["good", "mediocre", "broken", "misleading", None]
    options = {p["name"]: p["options"] for p in both["llm"]["providers"]}
    assert options["good"]["jumps"] == 8 and all("jumps" not in o for q, o in options.items() if q != "good")
    assert "jumps" not in campaign_dict(0, "rl", 48, [shape])["llm"]["providers"][0]["options"]   # default unchanged


def test_population_settings_reach_both_variants_and_bad_ones_are_refused_before_any_run(tmp_path):
    from experiments.ablation_arms import POPULATION, campaign_dict, run_arms_ablation
    shape = "1024x1024x1024"
    for variant in ("rl", "uniform"):
        pop = campaign_dict(0, variant, 48, [shape], population={"size": 4, "offspring": 4})["population"]
        assert (pop["size"], pop["offspring"], pop["islands"]) == (4, 4, POPULATION["islands"])
    assert {k: campaign_dict(0, "rl", 48, [shape])["population"][k] for k in POPULATION} == POPULATION
    for bad, why in (({"sizes": 4}, "not a population setting"), ({"size": 0}, "whole number"),
                     ({"elite": 1.5}, "whole number")):
        with pytest.raises(ValueError, match=why):
            run_arms_ablation(seeds=1, out_dir=tmp_path / "bad", budget=24, shapes=[shape], population=bad)
    assert not (tmp_path / "bad" / "runs").exists()
    from experiments.cli import build_parser
    parsed = build_parser().parse_args(["ablate-arms", "--out", str(tmp_path / "ok"), "--seeds", "1", "--budget",
                                        "24", "--shapes", shape, "--population", "size=4",
                                        "--population", "offspring=4"])
    assert parsed.func(parsed) == 0
    saved = json.loads((tmp_path / "ok" / "ablation-arms.json").read_text())
    assert saved["meta"]["population"] == {"size": 4, "offspring": 4}
    assert "population (both): size 4, islands 2, offspring 4" in (tmp_path / "ok" / "ablation-arms.md").read_text()


def test_the_summary_also_measures_rl_against_uniforms_own_evaluations_to_its_final_best():
    from experiments.ablation_arms import render_markdown, summarise

    def run(variant, curves):
        return {"variant": variant, "seed": 0, "seconds": 1.0, "arms": {},
                "shapes": {s: {"curve": c} for s, c in curves.items()}}
    # shape a: uniform stops improving at evaluation 4 of 10, rl gets there at 2 -> 0.2 of the budget, 0.5 of
    # uniform's own; shape b: uniform improves until evaluation 10, rl never reaches it -> 1.0 and 1.0
    uni = run("uniform", {"a": [9, 8, 8, 5, 5, 5, 5, 5, 5, 5], "b": [9, 9, 9, 9, 9, 9, 9, 9, 9, 4]})
    rl = run("rl", {"a": [9, 5, 5, 5, 5, 5, 5, 5, 5, 5], "b": [9, 8, 8, 8, 8, 8, 8, 8, 8, 8]})
    s = summarise([rl, uni], budget=10)
    by = {r["shape"]: r for r in s["rows"]}
    assert by["a"]["fraction"] == pytest.approx(0.2) and by["a"]["own_ratio"] == pytest.approx(0.5)
    assert by["b"]["fraction"] == pytest.approx(1.0) and by["b"]["own_ratio"] == pytest.approx(1.0)
    assert s["mean_fraction"] == pytest.approx(0.6) and s["own_ratio_mean"] == pytest.approx(0.75)
    assert s["uniform_own_fraction"] == pytest.approx(0.7)
    meta = {"seeds": [0], "budget": 10, "shapes": ["a", "b"], "candidates": 4, "broken": "garbage",
            "seeded": False, "param_mutate": True, "rl_label": "x"}
    assert "rl needs 0.750 of them (median 0.750)" in render_markdown(s, meta)
    # a shape where uniform found no kernel (its curve None throughout, or empty) has no target: left out of the
    # rows (it was a TypeError, and an IndexError for an empty curve); where rl found none it did not reach it
    nothing = [None] * 10
    for rl_c, uni_c in ((nothing, nothing), ([9.0] * 10, nothing), ([], [])):
        out = summarise([run("rl", {**{k: v["curve"] for k, v in rl["shapes"].items()}, "c": rl_c}),
                         run("uniform", {**{k: v["curve"] for k, v in uni["shapes"].items()}, "c": uni_c})], budget=10)
        assert [r["shape"] for r in out["rows"]] == ["a", "b"] and out["mean_fraction"] == pytest.approx(0.6)
    out = summarise([run("rl", {"c": nothing}), run("uniform", {"c": [9.0] * 10})], budget=10)
    assert out["rows"][0]["reached"] is False and out["rows"][0]["fraction"] == 1.0
    assert summarise([run("rl", {"c": nothing}), run("uniform", {"c": nothing})], budget=10)["cases"] == 0


def test_shapes_its_campaign_cannot_run_are_refused_before_any_run(tmp_path):
    """--shapes 13x77x201 (unaligned: its default family skips it) ran both variants, then crashed in the summary."""
    import subprocess
    import sys
    from engine_helpers import REPO, cli_env
    proc = subprocess.run([sys.executable, "-m", "experiments.cli", "ablate-arms", "--out", str(tmp_path / "a"),
                           "--seeds", "1", "--budget", "8", "--shapes", "1024x1024x1024,13x77x201"], cwd=str(REPO),
                          env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot run 13x77x201" in proc.stderr and "K=201" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / "a").exists()


def test_the_no_learning_control_chooses_uniformly_but_not_in_uniforms_order():
    from evolution.bandit import UniformPolicy
    from experiments.oracle_policy import UniformReplicate
    arms = ["a", "b", "c", "d"]
    control, uniform = UniformReplicate(arms), UniformPolicy(arms)
    r1, r2 = random.Random(7), random.Random(7)
    picks = [control._select(r1) for _ in range(4000)]
    plain = [uniform._select(r2) for _ in range(4000)]
    assert picks[:50] != plain[:50]                                  # another sequence from the same seed
    assert all(abs(picks.count(a) / 4000 - 0.25) < 0.03 for a in arms)
    assert control.probabilities() == uniform.probabilities()
