"""The mixed-quality LLM arms ablation (experiments/ablation_arms.py), small and fast: the scripted
models answer llm_param prompts as their quality says, deterministically from the seed, and a
two-seed run credits every arm, gives the broken arm -1 and the fewest pulls under the bandit.
(The figure itself, RL vs uniform over 5 seeds, is in docs/results/ablation-llm-arms.md.)"""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from evaluator.simulator import SimulatedEvaluator
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
            assert arms["llm_param@good"]["pulls"] == max(s["pulls"] for s in arms.values())
    split = result["summary"]["split"]
    assert split["rl"]["llm_param@broken"]["pull_share"] < split["uniform"]["llm_param@broken"]["pull_share"]
    rows = result["summary"]["rows"]
    assert [(x["seed"], x["shape"]) for x in rows] == [(0, "1024x1024x1024"), (1, "1024x1024x1024")]
    assert all(0 < x["fraction"] <= 1 for x in rows)
    saved = json.loads((tmp_path / "ablation-arms.json").read_text())
    assert saved["summary"]["rows"] == rows and "| llm_param@broken |" in (tmp_path / "ablation-arms.md").read_text()


def test_the_cli_command_is_registered_and_refuses_bad_numbers(tmp_path):
    from experiments.ablation_arms import _run_args
    from experiments.cli import build_parser
    args = build_parser().parse_args(["ablate-arms", "--out", str(tmp_path), "--seeds", "0"])
    assert args.func is _run_args
    with pytest.raises(ValueError, match="seeds must be a whole number >= 1"):
        args.func(args)
