"""Operator-selection policies (evolution/bandit.py) on synthetic bandits."""

from __future__ import annotations

import json
import math
import random

import pytest

from evolution.bandit import (OperatorPolicy, SoftmaxPolicyGradient, ThompsonPolicy, UCBPolicy, UniformPolicy,
                              make_policy)

ARMS = ["param_mutate", "param_crossover", "llm_param@qwen", "llm_patch@gpt"]
# Realistic scale: rewards are log speedups of child over parent, mostly small and negative.
MEANS = {"param_mutate": -0.3, "param_crossover": -0.1, "llm_param@qwen": 0.0, "llm_patch@gpt": 0.2}
BEST = "llm_patch@gpt"
LEARNERS = ["ucb", "thompson", "softmax_pg"]
ALL = ["uniform", *LEARNERS]


def play(policy: OperatorPolicy, steps: int, seed: int, means=MEANS, sd: float = 0.3) -> list[str]:
    """Run a policy on a Gaussian bandit; return the arms it pulled."""
    rng, env = random.Random(seed), random.Random(10_000 + seed)
    pulled = []
    for _ in range(steps):
        arm = policy.choose(rng)
        pulled.append(arm)
        policy.update(arm, env.gauss(means[arm], sd))
    return pulled


@pytest.mark.parametrize("name", LEARNERS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_learners_find_the_best_arm(name, seed):
    pulled = play(make_policy(name, ARMS), 500, seed)
    share = pulled.count(BEST) / len(pulled)
    assert share > 0.5, f"{name} pulled the best arm {share:.0%} of 500 steps"


@pytest.mark.parametrize("name", LEARNERS)
def test_learners_end_preferring_the_best_arm(name):
    policy = make_policy(name, ARMS)
    play(policy, 500, seed=7)
    p = policy.probabilities()
    assert max(p, key=p.get) == BEST
    assert math.isclose(sum(p.values()), 1.0)


def test_uniform_ignores_rewards():
    policy = make_policy("uniform", ARMS)
    pulled = play(policy, 2000, seed=0)
    for arm in ARMS:
        assert 0.21 < pulled.count(arm) / 2000 < 0.29
    assert policy.probabilities() == {a: 0.25 for a in ARMS}
    assert policy.stats()[BEST]["pulls"] == pulled.count(BEST)


@pytest.mark.parametrize("name", ALL)
def test_state_round_trip_gives_identical_future(name):
    params = {"gamma": 0.98} if name == "thompson" else {}
    policy = make_policy(name, ARMS, priors={"param_mutate": 2.0}, **params)
    play(policy, 120, seed=3)
    state = json.loads(json.dumps(policy.state_dict()))
    clone = make_policy(name, ARMS)  # other priors/params: the state brings its own
    clone.load_state_dict(state)
    assert clone.state_dict() == state
    assert clone.probabilities() == policy.probabilities()
    # same rng state + same rewards -> identical choices from here on
    assert play(policy, 80, seed=11) == play(clone, 80, seed=11)
    assert clone.state_dict() == policy.state_dict()


def test_load_state_refuses_other_policies_and_arms():
    ucb = make_policy("ucb", ARMS)
    with pytest.raises(ValueError, match="warm_start"):
        make_policy("thompson", ARMS).load_state_dict(ucb.state_dict())
    with pytest.raises(ValueError, match="arms"):
        make_policy("ucb", ARMS[:3]).load_state_dict(ucb.state_dict())
    with pytest.raises(ValueError):
        ucb.load_state_dict({"nonsense": 1})


def _best_share(policy, steps=60, seed=5):
    return play(policy, steps, seed).count(BEST) / steps


@pytest.mark.parametrize("name", LEARNERS)
def test_warm_start_moves_towards_old_best(name):
    old = make_policy(name, ARMS)
    play(old, 400, seed=1)
    fresh, warm = make_policy(name, ARMS), make_policy(name, ARMS)
    warm.warm_start(old.state_dict(), weight=0.5)
    if name != "ucb":  # UCB's probabilities are one-hot: compare behaviour instead
        assert warm.probabilities()[BEST] > fresh.probabilities()[BEST] + 0.1
    assert warm.stats()[BEST]["pulls"] == 0  # evidence carried over, this campaign's pulls not
    assert _best_share(warm) > _best_share(fresh)


@pytest.mark.parametrize("name", LEARNERS)
def test_warm_start_from_another_kind_and_other_arms(name):
    old_arms = ARMS[1:] + ["retired_op"]  # lacks param_mutate, has an arm this campaign dropped
    old = make_policy("thompson" if name != "thompson" else "ucb", old_arms)
    play(old, 400, seed=2, means={**MEANS, "retired_op": 1.0})
    new = make_policy(name, ARMS)
    before = new.state_dict()
    new.warm_start(json.loads(json.dumps(old.state_dict())), weight=0.5)
    assert new.arms == ARMS
    if name == "ucb":
        assert new.choose(random.Random(0)) == "param_mutate"  # no evidence yet: tried first
        stats = new.stats()
        assert max(ARMS[1:], key=lambda a: stats[a]["estimate"]) == BEST
    elif name == "thompson":
        post = new.posterior()
        assert post["param_mutate"] == ThompsonPolicy(ARMS).posterior()["param_mutate"]  # keeps its prior
        assert max(post, key=lambda a: post[a][0]) == BEST
    else:
        assert new.state_dict()["learner"]["h"]["param_mutate"] == before["learner"]["h"]["param_mutate"]
        p = new.probabilities()
        assert max(p, key=p.get) == BEST


def test_warm_start_weight_zero_and_validation():
    old = make_policy("thompson", ARMS)
    play(old, 100, seed=0)
    new = make_policy("thompson", ARMS)
    before = new.state_dict()
    new.warm_start(old.state_dict(), weight=0.0)
    assert new.state_dict() == before
    with pytest.raises(ValueError):
        new.warm_start(old.state_dict(), weight=1.5)
    uniform = make_policy("uniform", ARMS)
    uniform.warm_start(old.state_dict())
    assert uniform.probabilities() == {a: 0.25 for a in ARMS}


def test_priors_bias_early_choices():
    priors = {"llm_patch@gpt": 3.0}
    uniform = make_policy("uniform", ARMS, priors=priors)
    assert uniform.probabilities()["llm_patch@gpt"] == pytest.approx(0.5)
    softmax = make_policy("softmax_pg", ARMS, priors=priors, temperature=0.7)
    assert softmax.probabilities()["llm_patch@gpt"] == pytest.approx(0.5)
    # UCB plays unplayed arms first, in prior order (ties: arm order)
    ucb = make_policy("ucb", ARMS, priors={"llm_param@qwen": 5.0, "param_crossover": 2.0})
    rng = random.Random(0)
    first = []
    for _ in range(4):
        arm = ucb.choose(rng)
        first.append(arm)
        ucb.update(arm, 0.0)
    assert first == ["llm_param@qwen", "param_crossover", "param_mutate", "llm_patch@gpt"]
    # Thompson: prior means; the favoured arm wins most first draws
    ts = make_policy("thompson", ARMS, priors={"param_mutate": 10.0})
    rng = random.Random(1)
    draws = [ts.choose(rng) for _ in range(2000)]
    assert draws.count("param_mutate") > max(draws.count(a) for a in ARMS[1:])
    assert ts.probabilities()["param_mutate"] > 0.3
    # and without priors they are all alike
    plain = make_policy("thompson", ARMS).probabilities()
    assert all(abs(v - 0.25) < 0.03 for v in plain.values())


def test_thompson_probabilities_are_deterministic_and_leave_rng_alone():
    ts = make_policy("thompson", ARMS)
    play(ts, 50, seed=0)
    rng = random.Random(42)
    before = rng.getstate()
    p1, p2 = ts.probabilities(), ts.probabilities()
    assert p1 == p2 and math.isclose(sum(p1.values()), 1.0)
    assert rng.getstate() == before


def test_thompson_discount_tracks_a_change():
    arms = ["a", "b"]

    def late_share(gamma):
        policy = make_policy("thompson", arms, gamma=gamma)
        rng, env = random.Random(0), random.Random(1)
        late = 0
        for t in range(600):
            means = {"a": 0.3, "b": 0.0} if t < 300 else {"a": -0.3, "b": 0.0}
            arm = policy.choose(rng)
            policy.update(arm, env.gauss(means[arm], 0.2))
            late += t >= 400 and arm == "b"
        return late / 200

    assert late_share(0.95) > 0.7
    assert late_share(0.95) >= late_share(1.0)


def test_rewards_are_clipped():
    for name in ALL:
        policy = make_policy(name, ARMS)
        policy.update("param_mutate", 1e9)
        policy.update("param_crossover", -math.inf)
        stats = policy.stats()
        assert stats["param_mutate"]["mean_reward"] == 2.0
        assert stats["param_crossover"]["mean_reward"] == -2.0
        with pytest.raises(ValueError, match="NaN"):
            policy.update("param_mutate", float("nan"))
        with pytest.raises(ValueError, match="unknown arm"):
            policy.update("no_such_op", 0.1)
    narrow = make_policy("ucb", ARMS, reward_clip=[-0.5, 0.25])
    narrow.update("param_mutate", 3.0)
    narrow.update("param_mutate", -3.0)
    assert narrow.stats()["param_mutate"]["mean_reward"] == pytest.approx(-0.125)


def test_one_outlier_cannot_dominate():
    # one 1000x "speedup" (a timing glitch) on a bad arm must not flip a learner onto it
    clipped = make_policy("softmax_pg", ARMS)
    unclipped = make_policy("softmax_pg", ARMS, reward_clip=[-100, 100])
    for policy in (clipped, unclipped):
        play(policy, 100, seed=4)
        assert policy.probabilities()[BEST] > 0.8
        policy.update("param_mutate", math.log(1000.0))
    assert clipped.probabilities()["param_mutate"] < 0.2
    assert unclipped.probabilities()["param_mutate"] > 0.5  # what clipping prevents
    assert clipped.probabilities()[BEST] > 0.7


def test_make_policy_errors_name_the_parameter():
    with pytest.raises(ValueError, match=r"'cc'.*allowed: .*\bc\b"):
        make_policy("ucb", ARMS, cc=1.0)
    with pytest.raises(ValueError, match="'gama'.*gamma"):
        make_policy("thompson", ARMS, gama=0.9)
    with pytest.raises(ValueError, match="'lr'"):
        make_policy("uniform", ARMS, lr=0.1)
    with pytest.raises(ValueError, match="'gamma'"):
        make_policy("thompson", ARMS, gamma=1.5)
    with pytest.raises(ValueError, match="'reward_clip'"):
        make_policy("ucb", ARMS, reward_clip=[1, -1])
    with pytest.raises(ValueError, match="unknown selection policy 'exp3'"):
        make_policy("exp3", ARMS)
    with pytest.raises(ValueError, match="cannot import"):
        make_policy("no_such_pkg.mod:Policy", ARMS)


def test_make_policy_builds_by_name_and_import_path():
    assert isinstance(make_policy("uniform", ARMS), UniformPolicy)
    assert isinstance(make_policy("ucb", ARMS, c=1.0), UCBPolicy)
    assert isinstance(make_policy("softmax_pg", ARMS, lr=0.2), SoftmaxPolicyGradient)
    plug = make_policy("evolution.bandit:ThompsonPolicy", ARMS, gamma=0.9)
    assert isinstance(plug, ThompsonPolicy) and plug.params["gamma"] == 0.9


def test_arm_and_prior_validation():
    with pytest.raises(ValueError, match="twice"):
        make_policy("ucb", ["a", "a"])
    with pytest.raises(ValueError, match="at least one"):
        make_policy("ucb", [])
    with pytest.raises(ValueError, match="unknown arm"):
        make_policy("ucb", ["a", "b"], priors={"c": 2.0})
    with pytest.raises(ValueError, match="positive"):
        make_policy("ucb", ["a", "b"], priors={"a": 0.0})


def test_stats_and_state_are_json():
    for name in ALL:
        policy = make_policy(name, ARMS)
        play(policy, 30, seed=0)
        stats = policy.stats()
        assert set(stats) == set(ARMS)
        assert sum(s["pulls"] for s in stats.values()) == 30
        json.dumps(stats)
        json.dumps(policy.state_dict())


def test_release_stops_counting_a_pull_in_flight():
    """A pull whose child will never be rewarded is released: UCB no longer counts it as pending, so
    an arm with no evidence is unplayed again (and chosen first again). Other policies keep no such
    count and are unchanged by it; an unknown arm is an error."""
    ucb = make_policy("ucb", ARMS)
    first = ucb.choose(random.Random(0))
    assert ucb.stats()[first]["pending"] == 1 and ucb.choose(random.Random(0)) != first
    ucb.release(first)
    assert ucb.stats()[first]["pending"] == 0 and ucb.choose(random.Random(0)) == first
    ucb.release(first), ucb.release(first)
    assert ucb.stats()[first]["pending"] == 0       # never below zero
    ts = make_policy("thompson", ARMS)
    before = json.dumps(ts.state_dict(), sort_keys=True)
    ts.release(ARMS[0])
    assert json.dumps(ts.state_dict(), sort_keys=True) == before
    with pytest.raises(ValueError, match="unknown arm"):
        ucb.release("nope")
