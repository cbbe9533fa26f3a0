"""The base of every operator-selection policy: arms, priors, reward clipping, per-arm statistics,
parameter checks, persistence and warm start (the policies themselves are in evolution/bandit.py).

- priors: arm -> positive weight (missing = 1).
- rewards are clipped to `reward_clip` (default [-2, 2]) before anything else; NaN is refused.
- `state_dict()` is JSON-serialisable and complete: `load_state_dict(state_dict())` on a policy
  with the same arms restores it exactly (parameters included).
- `warm_start(state, weight)` starts from another campaign's saved state (any policy kind).
"""


from __future__ import annotations

import math
import random
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np


STATE_VERSION = 1
DEFAULT_REWARD_CLIP = (-2.0, 2.0)

__all__ = ["OperatorPolicy", "sample_index", "DEFAULT_REWARD_CLIP", "STATE_VERSION"]


def sample_index(rng: random.Random, probs: Sequence[float]) -> int:
    """Draw an index with the given probabilities using exactly one `rng.random()`."""
    total = float(sum(probs))
    if not total > 0:
        raise ValueError("cannot sample from all-zero probabilities")
    u = rng.random() * total
    acc = 0.0
    last = 0
    for i, p in enumerate(probs):
        if p <= 0:
            continue
        last = i
        acc += p
        if u < acc:
            return i
    return last  # rounding: u landed on the total


def _softmax(x: Sequence[float]) -> list[float]:
    m = max(x)
    e = [math.exp(v - m) for v in x]
    s = sum(e)
    return [v / s for v in e]


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"parameter {name!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"parameter {name!r} must be finite, got {value!r}")
    return value


class OperatorPolicy:
    """Base class. Subclasses declare their parameters (and defaults) in `PARAMS`, override
    `_select`, `_learn` and the state hooks; the base handles arms, priors, clipping, per-arm
    statistics, validation and serialisation."""

    name: ClassVar[str] = "base"
    #: parameters every policy accepts, with defaults
    COMMON_PARAMS: ClassVar[dict[str, Any]] = {"reward_clip": DEFAULT_REWARD_CLIP}
    #: policy-specific parameters, with defaults
    PARAMS: ClassVar[dict[str, Any]] = {}

    def __init__(self, arms: Sequence[str], priors: "Mapping[str, float] | None" = None, **params: Any):
        if isinstance(arms, str):
            raise ValueError("arms must be a sequence of names, not one string")
        arms = list(arms)
        if not arms:
            raise ValueError(f"{self.name} policy needs at least one arm")
        for arm in arms:
            if not isinstance(arm, str) or not arm:
                raise ValueError(f"an arm is a non-empty string (operator or operator@model), got {arm!r}")
        dupes = sorted({a for a in arms if arms.count(a) > 1})
        if dupes:
            raise ValueError(f"arms named twice: {', '.join(dupes)}")
        self.arms: list[str] = arms
        self.priors: dict[str, float] = self._check_priors(priors or {})
        self.params: dict[str, Any] = self._check_params(params)
        self._reset()

    # -- parameters ------------------------------------------------------------------------
    @classmethod
    def allowed_params(cls) -> dict[str, Any]:
        out = dict(cls.COMMON_PARAMS)
        out.update(cls.PARAMS)
        return out

    def _check_priors(self, priors: Mapping[str, float]) -> dict[str, float]:
        if not isinstance(priors, Mapping):
            raise ValueError(f"priors must be a mapping arm -> positive weight, got {type(priors).__name__}")
        unknown = sorted(set(priors) - set(self.arms))
        if unknown:
            raise ValueError(f"priors name unknown arm(s) {', '.join(map(str, unknown))}; "
                             f"arms: {', '.join(self.arms)}")
        out = {}
        for arm in self.arms:
            w = priors.get(arm, 1.0)
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
                raise ValueError(f"prior weight of arm {arm!r} must be a positive finite number, got {w!r}")
            out[arm] = float(w)
        return out

    def _check_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        allowed = self.allowed_params()
        for key in params:
            if key not in allowed:
                raise ValueError(f"{self.name} policy has no parameter {key!r}; "
                                 f"allowed: {', '.join(sorted(allowed))}")
        merged = dict(allowed)
        merged.update(params)
        clip = merged["reward_clip"]
        if not isinstance(clip, (list, tuple)) or len(clip) != 2:
            raise ValueError(f"parameter 'reward_clip' is [low, high], got {clip!r}")
        low, high = _as_float("reward_clip", clip[0]), _as_float("reward_clip", clip[1])
        if not low < high:
            raise ValueError(f"parameter 'reward_clip' needs low < high, got {clip!r}")
        merged["reward_clip"] = [low, high]
        for key, default in self.PARAMS.items():
            if isinstance(default, (int, float)) and not isinstance(default, bool):
                merged[key] = _as_float(key, merged[key])
        self._validate(merged)
        return merged

    def _validate(self, params: dict[str, Any]) -> None:
        """Subclasses check their own parameter ranges (raise ValueError naming the parameter)."""

    # -- priors as rewards / preferences ---------------------------------------------------
    def _log_priors(self) -> dict[str, float]:
        logs = {a: math.log(self.priors[a]) for a in self.arms}
        centre = sum(logs.values()) / len(logs)
        return {a: v - centre for a, v in logs.items()}

    def _prior_order(self) -> list[str]:
        """Arms by descending prior weight, ties in arm order."""
        return sorted(self.arms, key=lambda a: (-self.priors[a], self.arms.index(a)))

    # -- public interface --------------------------------------------------------------------
    def clip(self, reward: float) -> float:
        if isinstance(reward, bool) or not isinstance(reward, (int, float, np.floating, np.integer)):
            raise ValueError(f"reward must be a number, got {reward!r}")
        reward = float(reward)
        if math.isnan(reward):
            raise ValueError("reward is NaN")
        low, high = self.params["reward_clip"]
        return min(max(reward, low), high)

    def _check_arm(self, arm: str) -> None:
        if arm not in self._index:
            raise ValueError(f"unknown arm {arm!r}; arms: {', '.join(self.arms)}")

    def choose(self, rng: random.Random) -> str:
        return self._select(rng)

    def update(self, arm: str, reward: float) -> None:
        self._check_arm(arm)
        r = self.clip(reward)
        st = self._arm_stats[arm]
        st["pulls"] += 1
        st["reward_sum"] += r
        st["reward_sq_sum"] += r * r
        st["last_reward"] = r
        self.steps += 1
        self._learn(arm, r)

    def release(self, arm: str) -> None:
        """A pull of `arm` that will never be rewarded: its call gave no new child, or its child was left
        out before it was measured (a round cut to its built genomes). A policy that counts pulls in
        flight stops counting it."""
        self._check_arm(arm)
        self._release(arm)

    def hold(self, arm: str) -> None:
        """One more child of a pull of `arm` in flight: a call returned several children, and each of
        them will be told (or released). A policy that counts pulls in flight counts it."""
        self._check_arm(arm)
        self._hold(arm)

    def probabilities(self) -> dict[str, float]:
        raise NotImplementedError

    def stats(self) -> dict[str, dict]:
        probs = self.probabilities()
        out = {}
        for arm in self.arms:
            st = self._arm_stats[arm]
            n = st["pulls"]
            mean = st["reward_sum"] / n if n else None
            var = max(0.0, st["reward_sq_sum"] / n - mean * mean) if n else None
            out[arm] = {
                "pulls": n,
                "mean_reward": mean,
                "std_reward": math.sqrt(var) if var is not None else None,
                "last_reward": st["last_reward"],
                "prior": self.priors[arm],
                "probability": probs[arm],
            }
            out[arm].update(self._arm_extra(arm))
        return out

    # -- hooks ---------------------------------------------------------------------------------
    def _reset(self) -> None:
        self._index = {a: i for i, a in enumerate(self.arms)}
        self._arm_stats = {a: {"pulls": 0, "reward_sum": 0.0, "reward_sq_sum": 0.0, "last_reward": None}
                           for a in self.arms}
        self.steps = 0
        self._reset_learner()

    def _reset_learner(self) -> None:
        pass

    def _select(self, rng: random.Random) -> str:
        raise NotImplementedError

    def _learn(self, arm: str, reward: float) -> None:
        pass

    def _release(self, arm: str) -> None:
        pass

    def _hold(self, arm: str) -> None:
        pass

    def _arm_extra(self, arm: str) -> dict:
        return {}

    def _learner_state(self) -> dict:
        return {}

    def _load_learner_state(self, state: Mapping[str, Any]) -> None:
        pass

    def _warm_same(self, state: Mapping[str, Any], common: list[str], weight: float) -> None:
        """Warm start from a state of the same policy kind."""
        self._warm_generic(state, common, weight)

    def _warm_generic(self, state: Mapping[str, Any], common: list[str], weight: float) -> None:
        """Warm start from per-arm reward statistics (any policy kind)."""

    # -- persistence ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "policy": self.name,
            "version": STATE_VERSION,
            "arms": list(self.arms),
            "priors": dict(self.priors),
            "params": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in self.params.items()},
            "steps": self.steps,
            "arm_stats": {a: dict(self._arm_stats[a]) for a in self.arms},
            "learner": self._learner_state(),
        }

    def _check_state(self, state: Any) -> None:
        if not isinstance(state, Mapping) or "arms" not in state or "arm_stats" not in state:
            raise ValueError("not a policy state (expected the dict from OperatorPolicy.state_dict())")
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"policy state version {state.get('version')!r} is not {STATE_VERSION}")

    def load_state_dict(self, state: dict) -> None:
        """Restore exactly (parameters included). The arms must be the same, in the same order;
        to start from a campaign with other arms use `warm_start`."""
        self._check_state(state)
        if state.get("policy") != self.name:
            raise ValueError(f"state is of policy {state.get('policy')!r}, this policy is {self.name!r}; "
                             "use warm_start to carry evidence across policy kinds")
        if list(state["arms"]) != self.arms:
            raise ValueError(f"state arms {list(state['arms'])} differ from this policy's arms {self.arms}; "
                             "use warm_start to carry evidence across arm sets")
        self.priors = self._check_priors(state["priors"])
        self.params = self._check_params(state["params"])
        self._reset()
        self.steps = int(state["steps"])
        for arm in self.arms:
            raw = state["arm_stats"][arm]
            self._arm_stats[arm] = {
                "pulls": int(raw["pulls"]),
                "reward_sum": float(raw["reward_sum"]),
                "reward_sq_sum": float(raw["reward_sq_sum"]),
                "last_reward": None if raw.get("last_reward") is None else float(raw["last_reward"]),
            }
        self._load_learner_state(state.get("learner") or {})

    def warm_start(self, state: dict, weight: float = 0.5) -> None:
        """Add another campaign's evidence, shrunk by `weight` (0 = ignore it, 1 = take it whole).

        From a state of the same policy kind the learner's own evidence is carried over (UCB and
        Thompson: pseudo-counts and reward sums times `weight`; softmax_pg: the learned part of
        the preferences times `weight`). From another kind, the per-arm reward statistics are used.
        This campaign's own pull counts (`stats()['pulls']`) stay as they are."""
        self._check_state(state)
        weight = _as_float("weight", weight)
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"warm_start weight must be in [0, 1], got {weight}")
        common = [a for a in self.arms if a in set(state["arms"])]
        if not common or weight == 0.0:
            return
        if state.get("policy") == self.name:
            self._warm_same(state, common, weight)
        else:
            self._warm_generic(state, common, weight)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(arms={self.arms!r}, steps={self.steps})"
