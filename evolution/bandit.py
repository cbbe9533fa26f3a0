"""Operator-selection policies: multi-armed bandits over arms = operators (or "operator@model").

The engine asks a policy which arm to pull (`choose`), applies that operator, measures the child,
and reports `reward = log(parent_time / child_time)` (or a negative penalty for a child that failed
to build, verify or run) through `update`. Policies:

- `uniform`     ignores rewards; priors act as fixed selection weights.
- `ucb`         UCB1: mean reward + c * sqrt(2 ln N / n); arms never pulled go first, in prior order;
                priors enter as pseudo-observations.
- `thompson`    Gaussian posterior on each arm's mean reward (known noise scale), optional
                discount `gamma` < 1 so old evidence fades (operators' value changes as the
                population improves); priors enter as prior means.
- `softmax_pg`  gradient bandit: preferences H, pi = softmax(H / temperature), baseline = running
                mean reward, step size `lr`; priors are the initial preferences (pi starts
                proportional to the prior weights).

Common to all:

- priors: arm -> positive weight (missing = 1). A prior weight w maps to a prior reward
  `prior_scale * (log w - mean log w)` (UCB, Thompson) or an initial preference
  `temperature * log w` (softmax_pg).
- rewards are clipped to `reward_clip` (default [-2, 2]) before anything else, so one outlier
  (a 10x faster child, or a huge failure penalty) cannot dominate; NaN is refused.
- all randomness comes from the `random.Random` passed to `choose`; `probabilities()` of the
  Thompson policy is a Monte-Carlo estimate with a fixed internal seed and never touches it.
- `state_dict()` is JSON-serialisable and complete: `load_state_dict(state_dict())` on a policy
  with the same arms restores it exactly (parameters included).
- `warm_start(state, weight)` starts from another campaign's saved state (any policy kind): its
  evidence is shrunk by `weight`; arms it lacks keep their priors (and, for UCB, are still tried
  first); arms it has that this policy lacks are ignored.

No module-level mutable state: `make_policy` builds a fresh registry on each call.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from genome.registry import Registry, check_params, class_with

from .policy_base import DEFAULT_REWARD_CLIP, OperatorPolicy, _softmax, sample_index

__all__ = [
    "OperatorPolicy", "UniformPolicy", "UCBPolicy", "ThompsonPolicy", "SoftmaxPolicyGradient",
    "make_policy", "policy_registry", "DEFAULT_REWARD_CLIP", "sample_index",
]


class UniformPolicy(OperatorPolicy):
    """Fixed weights: each arm with probability prior / sum(priors). Rewards are recorded for
    `stats()` but never change the choice; `warm_start` changes nothing."""

    name = "uniform"

    def probabilities(self) -> dict[str, float]:
        total = sum(self.priors.values())
        return {a: self.priors[a] / total for a in self.arms}

    def _select(self, rng: random.Random) -> str:
        return self.arms[sample_index(rng, [self.priors[a] for a in self.arms])]


class _CountingPolicy(OperatorPolicy):
    """Shared by UCB and Thompson: per-arm (possibly discounted, possibly warm-started)
    evidence n[a] (pseudo-count) and s[a] (reward sum), plus prior pseudo-observations."""

    def _reset_learner(self) -> None:
        self._n = {a: 0.0 for a in self.arms}
        self._s = {a: 0.0 for a in self.arms}

    def _prior_mean(self) -> dict[str, float]:
        scale = self.params["prior_scale"]
        return {a: scale * v for a, v in self._log_priors().items()}

    def _posterior(self, arm: str, prior_mean: Mapping[str, float]) -> tuple[float, float]:
        """(mean reward estimate, effective count) with the prior as `prior_strength` pseudo-pulls."""
        k = self.params["prior_strength"]
        n = self._n[arm] + k
        mean = (k * prior_mean[arm] + self._s[arm]) / n if n > 0 else prior_mean[arm]
        return mean, n

    def _learner_state(self) -> dict:
        return {"n": dict(self._n), "s": dict(self._s)}

    def _load_learner_state(self, state: Mapping[str, Any]) -> None:
        self._n = {a: float(state["n"][a]) for a in self.arms}
        self._s = {a: float(state["s"][a]) for a in self.arms}

    def _warm_same(self, state: Mapping[str, Any], common: list[str], weight: float) -> None:
        learner = state.get("learner") or {}
        if "n" not in learner or "s" not in learner:
            return self._warm_generic(state, common, weight)
        for arm in common:
            self._n[arm] += weight * float(learner["n"][arm])
            self._s[arm] += weight * float(learner["s"][arm])

    def _warm_generic(self, state: Mapping[str, Any], common: list[str], weight: float) -> None:
        for arm in common:
            raw = state["arm_stats"][arm]
            self._n[arm] += weight * float(raw["pulls"])
            self._s[arm] += weight * float(raw["reward_sum"])


class UCBPolicy(_CountingPolicy):
    """UCB1 on clipped rewards: score = mean + c * sqrt(2 ln N / n).

    n is the arm's evidence (real pulls plus warm-started evidence) plus `prior_strength`
    pseudo-pulls at the prior reward, plus the arm's pulls still pending (chosen but not yet
    rewarded: the engine asks for a whole round before any child is measured, and without this
    every child of a round would get the same operator); N is the sum of all arms' n. An arm with
    no evidence and nothing pending is pulled first (in descending prior order). Ties go to the
    higher prior, then arm order. `choose` is deterministic and does not consume the rng.
    `probabilities()` is one-hot on the arm `choose` would return now."""

    name = "ucb"
    PARAMS = {"c": 0.5, "prior_strength": 1.0, "prior_scale": 0.1}

    def _validate(self, params: dict[str, Any]) -> None:
        if params["c"] < 0:
            raise ValueError(f"parameter 'c' must be >= 0, got {params['c']}")
        if params["prior_strength"] < 0:
            raise ValueError(f"parameter 'prior_strength' must be >= 0, got {params['prior_strength']}")

    def _reset_learner(self) -> None:
        super()._reset_learner()
        self._pending = {a: 0 for a in self.arms}

    def _learner_state(self) -> dict:
        return {**super()._learner_state(), "pending": dict(self._pending)}

    def _load_learner_state(self, state: Mapping[str, Any]) -> None:
        super()._load_learner_state(state)
        pending = state.get("pending") or {}
        self._pending = {a: int(pending.get(a, 0)) for a in self.arms}

    def scores(self) -> dict[str, float]:
        """UCB score per arm (+inf for arms without evidence and nothing pending)."""
        prior_mean = self._prior_mean()
        total = sum(self._n[a] + self._pending[a] + self.params["prior_strength"] for a in self.arms)
        log_total = math.log(max(total, 1.0))
        out = {}
        for arm in self.arms:
            if self._n[arm] <= 0 and self._pending[arm] == 0:
                out[arm] = math.inf
                continue
            mean, n = self._posterior(arm, prior_mean)
            out[arm] = mean + self.params["c"] * math.sqrt(2.0 * log_total / (n + self._pending[arm]))
        return out

    def _next_arm(self) -> str:
        unplayed = [a for a in self._prior_order() if self._n[a] <= 0 and self._pending[a] == 0]
        if unplayed:
            return unplayed[0]
        scores = self.scores()
        order = self._prior_order()
        return max(order, key=lambda a: (scores[a], -order.index(a)))

    def _select(self, rng: random.Random) -> str:
        arm = self._next_arm()
        self._pending[arm] += 1
        return arm

    def _learn(self, arm: str, reward: float) -> None:
        self._n[arm] += 1.0
        self._s[arm] += reward
        self._release(arm)

    def _release(self, arm: str) -> None:
        self._pending[arm] = max(0, self._pending[arm] - 1)

    def _hold(self, arm: str) -> None:
        self._pending[arm] += 1

    def probabilities(self) -> dict[str, float]:
        chosen = self._next_arm()
        return {a: (1.0 if a == chosen else 0.0) for a in self.arms}

    def _arm_extra(self, arm: str) -> dict:
        mean, n = self._posterior(arm, self._prior_mean())
        score = self.scores()[arm]
        return {"evidence": self._n[arm], "pending": self._pending[arm], "estimate": mean,
                "score": score if math.isfinite(score) else None}


class ThompsonPolicy(_CountingPolicy):
    """Gaussian Thompson sampling on each arm's mean reward (known noise scale `sigma`).

    Posterior of arm a: Normal(mean_a, sigma^2 / (prior_strength + n_a)) with
    mean_a = (prior_strength * prior_mean_a + s_a) / (prior_strength + n_a). With `gamma` < 1 every
    update first multiplies all arms' n and s by gamma (discounted Thompson sampling), so evidence
    saturates at 1 / (1 - gamma) pulls and the policy keeps tracking arms whose value drifts."""

    name = "thompson"
    PARAMS = {"sigma": 0.5, "gamma": 1.0, "prior_strength": 1.0, "prior_scale": 0.1,
              "probability_samples": 4000, "probability_seed": 0}

    def _validate(self, params: dict[str, Any]) -> None:
        if params["sigma"] <= 0:
            raise ValueError(f"parameter 'sigma' must be > 0, got {params['sigma']}")
        if not 0 < params["gamma"] <= 1:
            raise ValueError(f"parameter 'gamma' must be in (0, 1], got {params['gamma']}")
        if params["prior_strength"] <= 0:
            raise ValueError(f"parameter 'prior_strength' must be > 0 (the posterior needs a prior), "
                             f"got {params['prior_strength']}")
        for key in ("probability_samples", "probability_seed"):
            v = params[key]
            if v != int(v) or v < (1 if key == "probability_samples" else 0):
                raise ValueError(f"parameter {key!r} must be a non-negative integer, got {v}")
            params[key] = int(v)

    def posterior(self) -> dict[str, tuple[float, float]]:
        """arm -> (posterior mean, posterior std) of its mean reward."""
        prior_mean = self._prior_mean()
        out = {}
        for arm in self.arms:
            mean, n = self._posterior(arm, prior_mean)
            out[arm] = (mean, self.params["sigma"] / math.sqrt(n))
        return out

    def _select(self, rng: random.Random) -> str:
        post = self.posterior()
        best, best_draw = self.arms[0], -math.inf
        for arm in self.arms:
            mean, std = post[arm]
            draw = rng.gauss(mean, std)
            if draw > best_draw:
                best, best_draw = arm, draw
        return best

    def _learn(self, arm: str, reward: float) -> None:
        g = self.params["gamma"]
        if g < 1.0:
            for a in self.arms:
                self._n[a] *= g
                self._s[a] *= g
        self._n[arm] += 1.0
        self._s[arm] += reward

    def probabilities(self) -> dict[str, float]:
        """P(arm has the largest posterior draw), estimated with a fixed-seed numpy generator."""
        post = self.posterior()
        gen = np.random.default_rng(self.params["probability_seed"])
        means = np.array([post[a][0] for a in self.arms])
        stds = np.array([post[a][1] for a in self.arms])
        draws = gen.standard_normal((self.params["probability_samples"], len(self.arms))) * stds + means
        wins = np.bincount(np.argmax(draws, axis=1), minlength=len(self.arms))
        total = wins.sum()
        return {a: float(wins[i] / total) for i, a in enumerate(self.arms)}

    def _arm_extra(self, arm: str) -> dict:
        mean, std = self.posterior()[arm]
        return {"evidence": self._n[arm], "posterior_mean": mean, "posterior_std": std}


class SoftmaxPolicyGradient(OperatorPolicy):
    """Gradient bandit (Sutton & Barto 2.8): pi = softmax(H / temperature); after reward r on arm
    a with baseline b (the running mean of all rewards before this one; the first reward sets it):
    H_a += lr (r - b)(1 - pi_a), H_x -= lr (r - b) pi_x for x != a. Initial H = temperature * log
    prior, so pi starts proportional to the priors."""

    name = "softmax_pg"
    PARAMS = {"lr": 0.5, "temperature": 1.0, "baseline_decay": 0.0}

    def _validate(self, params: dict[str, Any]) -> None:
        if params["lr"] <= 0:
            raise ValueError(f"parameter 'lr' must be > 0, got {params['lr']}")
        if params["temperature"] <= 0:
            raise ValueError(f"parameter 'temperature' must be > 0, got {params['temperature']}")
        if not 0 <= params["baseline_decay"] < 1:
            raise ValueError(f"parameter 'baseline_decay' must be in [0, 1) (0 = plain running mean), "
                             f"got {params['baseline_decay']}")

    def _initial_preferences(self) -> dict[str, float]:
        t = self.params["temperature"]
        return {a: t * v for a, v in self._log_priors().items()}

    def _reset_learner(self) -> None:
        self._h = self._initial_preferences()
        self._baseline = 0.0
        self._baseline_count = 0.0

    def _pi(self) -> list[float]:
        t = self.params["temperature"]
        return _softmax([self._h[a] / t for a in self.arms])

    def probabilities(self) -> dict[str, float]:
        return dict(zip(self.arms, self._pi()))

    def _select(self, rng: random.Random) -> str:
        return self.arms[sample_index(rng, self._pi())]

    def _learn(self, arm: str, reward: float) -> None:
        if self._baseline_count <= 0:
            self._baseline = reward
        advantage = reward - self._baseline
        pi = self._pi()
        lr = self.params["lr"]
        for i, a in enumerate(self.arms):
            if a == arm:
                self._h[a] += lr * advantage * (1.0 - pi[i])
            else:
                self._h[a] -= lr * advantage * pi[i]
        # baseline: running mean (baseline_decay = 0) or exponential moving average
        self._baseline_count += 1.0
        decay = self.params["baseline_decay"]
        step = (1.0 - decay) if decay > 0 else 1.0 / self._baseline_count
        self._baseline += step * (reward - self._baseline)

    def _learner_state(self) -> dict:
        return {"h": dict(self._h), "baseline": self._baseline, "baseline_count": self._baseline_count}

    def _load_learner_state(self, state: Mapping[str, Any]) -> None:
        self._h = {a: float(state["h"][a]) for a in self.arms}
        self._baseline = float(state["baseline"])
        self._baseline_count = float(state["baseline_count"])

    def _warm_same(self, state: Mapping[str, Any], common: list[str], weight: float) -> None:
        learner = state.get("learner") or {}
        if "h" not in learner:
            return self._warm_generic(state, common, weight)
        # the learned part of the old preferences: H_old minus the old initial preferences
        old = SoftmaxPolicyGradient(list(state["arms"]), state.get("priors"), **dict(state.get("params") or {}))
        init = old._initial_preferences()
        learned = {a: float(learner["h"][a]) - init[a] for a in common}
        centre = sum(learned.values()) / len(learned)
        for arm in common:
            self._h[arm] += weight * (learned[arm] - centre)
        self._merge_baseline(float(learner.get("baseline", 0.0)),
                             weight * float(learner.get("baseline_count", 0.0)))

    def _warm_generic(self, state: Mapping[str, Any], common: list[str], weight: float) -> None:
        # Approximate the accumulated policy-gradient steps from reward statistics:
        # each pull moved H_a by about lr * (r - mean reward).
        stats = {a: state["arm_stats"][a] for a in common}
        pulls = sum(float(s["pulls"]) for s in stats.values())
        if pulls <= 0:
            return
        grand = sum(float(s["reward_sum"]) for s in stats.values()) / pulls
        lr = self.params["lr"]
        delta = {a: lr * (float(s["reward_sum"]) - float(s["pulls"]) * grand) for a, s in stats.items()}
        centre = sum(delta.values()) / len(delta)
        for arm in common:
            self._h[arm] += weight * (delta[arm] - centre)
        self._merge_baseline(grand, weight * pulls)

    def _merge_baseline(self, value: float, count: float) -> None:
        if count <= 0:
            return
        total = self._baseline_count + count
        self._baseline = (self._baseline * self._baseline_count + value * count) / total
        self._baseline_count = total

    def _arm_extra(self, arm: str) -> dict:
        return {"preference": self._h[arm]}


POLICY_METHODS = ("choose", "update", "probabilities", "stats", "state_dict", "load_state_dict", "warm_start")

BUILTIN_POLICIES: dict[str, type[OperatorPolicy]] = {
    UniformPolicy.name: UniformPolicy,
    UCBPolicy.name: UCBPolicy,
    ThompsonPolicy.name: ThompsonPolicy,
    SoftmaxPolicyGradient.name: SoftmaxPolicyGradient,
}


def policy_registry() -> Registry:
    """A fresh registry of the built-in policies (plug-ins: add to it, or name an import path)."""
    return Registry("selection policy", dict(BUILTIN_POLICIES),
                    check=class_with(*POLICY_METHODS))


def make_policy(name: str, arms: Sequence[str], priors: "Mapping[str, float] | None" = None,
                registry: "Registry | None" = None, **params: Any) -> OperatorPolicy:
    """Build a policy by name ("uniform", "ucb", "thompson", "softmax_pg") or import path
    "package.module:Class". Unknown parameters raise ValueError naming them and the allowed ones."""
    factory: Callable[..., Any] = (registry or policy_registry()).resolve(name)
    if not (isinstance(factory, type) and issubclass(factory, OperatorPolicy)):  # built-ins validate themselves
        check_params(factory, params, ("arms", "priors"), f"selection policy {name!r}")
    policy = factory(arms, priors, **params)
    for method in POLICY_METHODS:
        if not callable(getattr(policy, method, None)):
            raise ValueError(f"selection policy {name!r} built an object without {method}(): {policy!r}")
    return policy
