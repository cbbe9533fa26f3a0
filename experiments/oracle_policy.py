"""Diagnostics for the arm ablation (experiments/ablation_arms.py), not selection policies.

GoodArmOracle always picks the arm of the good scripted model (the arm whose name ends in "@good"), as a policy
that knew the arms' qualities from the first pull would. Its fraction is the ceiling of what any
operator-selection policy can reach on that ablation with the rest of the machinery unchanged
(parent selection, survivors, islands, the engine's pipelined rounds).

    evogemm ablate-arms --seeds 5 --jobs 2 --out runs/arms-oracle --policy experiments.oracle_policy:GoodArmOracle

UniformReplicate is uniform choice on a shifted random stream: run in the rl variant's place, it
is the metric's no-learning control. It gives the fraction of the budget that a second, independent
uniform run needs to reach the first one's final best, which is what the rl variant's fraction is
to be compared with.

    evogemm ablate-arms --seeds 5 --jobs 2 --out runs/arms-null --policy experiments.oracle_policy:UniformReplicate
"""

from __future__ import annotations

import random

from evolution.bandit import UniformPolicy


class GoodArmOracle(UniformPolicy):
    """Always the "...@good" arm (the first arm when there is none). Draws one number from the rng
    per choice, as the uniform policy does, so the rest of the run's random stream keeps its shape."""

    name = "good_arm_oracle"

    def _target(self) -> str:
        return next((a for a in self.arms if a.endswith("@good")), self.arms[0])

    def probabilities(self) -> dict[str, float]:
        target = self._target()
        return {a: (1.0 if a == target else 0.0) for a in self.arms}

    def _select(self, rng: random.Random) -> str:
        rng.random()
        return self._target()


class UniformReplicate(UniformPolicy):
    """Uniform choice, by the priors, from a stream shifted by one draw a choice: the same
    distribution as the uniform variant's, a different sequence of arms and of everything the run
    draws after them."""

    name = "uniform_replicate"

    def _select(self, rng: random.Random) -> str:
        rng.random()
        return super()._select(rng)
