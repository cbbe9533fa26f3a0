"""A selection-policy plug-in: epsilon-greedy over the arms' mean rewards.

Subclassing `OperatorPolicy` gives arms, priors, parameter checks, statistics and persistence;
a policy only says how it picks (`_select`), what its probabilities are, and what it learns.
"""

from __future__ import annotations

import random

from evolution.policy_base import OperatorPolicy, sample_index


class EpsilonGreedy(OperatorPolicy):
    name = "epsilon_greedy"
    PARAMS = {"epsilon": 0.1}

    def _validate(self, params: dict) -> None:
        if not 0.0 <= float(params["epsilon"]) <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {params['epsilon']!r}")

    def _means(self) -> dict[str, float]:
        return {a: (st["reward_sum"] / st["pulls"] if st["pulls"] else float("inf"))
                for a, st in self._arm_stats.items()}

    def probabilities(self) -> dict[str, float]:
        eps = float(self.params["epsilon"])
        means = self._means()
        best = max(self.arms, key=lambda a: (means[a], -self.arms.index(a)))
        return {a: eps / len(self.arms) + (1 - eps if a == best else 0.0) for a in self.arms}

    def _select(self, rng: random.Random) -> str:
        probs = self.probabilities()
        return self.arms[sample_index(rng, [probs[a] for a in self.arms])]
