"""Tiny plug-ins of every kind, for the campaign schema's tests (tests/test_plugin_kinds.py).

They are named in campaign YAML by import path, e.g. `strategy: plugin_examples_for_schema:TinyStrategy`
(pytest puts tests/ on sys.path). They only need to be of the right kind and to check their
constructor arguments; nothing here is run by an engine.
"""

from __future__ import annotations

import random
from typing import Any, Sequence


class TinyStrategy:
    """A search strategy: built per family as TinyStrategy(space, problem, seed, **params)."""

    name = "tiny"

    def __init__(self, space: Any, problem: Any, seed: int, batch: int = 4):
        if batch < 1:
            raise ValueError("tiny strategy: batch must be >= 1")
        self.batch = batch

    def ask(self, n: int) -> list:
        return []

    def tell(self, offspring: Any, measurement: Any) -> None:
        pass


class TinyPolicy:
    """A selection policy over arms: TinyPolicy(arms, priors, **params)."""

    name = "tiny"

    def __init__(self, arms: Sequence[str], priors: "dict | None" = None, greed: float = 0.5):
        if not 0 <= greed <= 1:
            raise ValueError("tiny policy: greed must be in [0, 1]")
        self.arms = list(arms)
        self.greed = greed

    def choose(self, rng: random.Random) -> str:
        return self.arms[0]

    def update(self, arm: str, reward: float) -> None:
        pass

    def probabilities(self) -> dict[str, float]:
        return {a: 1.0 / len(self.arms) for a in self.arms}

    def stats(self) -> dict:
        return {}

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass

    def warm_start(self, state: dict, weight: float = 0.5) -> None:
        pass


class FirstParents:
    """A parent selection: always the first candidates."""

    name = "first"

    def __init__(self, offset: int = 0):
        if offset < 0:
            raise ValueError("first parents: offset must be >= 0")
        self.offset = offset

    def select(self, candidates: Sequence[tuple[Any, float]], k: int, rng: random.Random, space: Any) -> list:
        return [g for g, _ in candidates[self.offset:self.offset + k]]


class NoOpOperator:
    """An operator: one parent in, no child out."""

    arity = 1

    def __init__(self, strength: int = 1, name: str = "noop"):
        self.strength = strength
        self.name = name

    def __call__(self, parents: Sequence[Any], ctx: Any) -> list:
        return []


class BrokenOperator:
    """An operator whose every call raises (a plug-in with a bug)."""

    arity = 1
    name = "broken"

    def __call__(self, parents: Sequence[Any], ctx: Any) -> list:
        raise RuntimeError("a bug in the plug-in")


class EchoProvider:
    """An LLM provider kind: answers with the prompt."""

    def complete(self, prompt: str, **kwargs: Any) -> str:
        return prompt


class NullEvaluator:
    """An evaluator backend: built with families= and its options."""

    simulated = True

    def __init__(self, families: Any = None, scale: float = 1.0):
        self.scale = scale

    def describe(self) -> str:
        return "null evaluator"

    def baselines(self, problem: Any) -> Any:
        return None

    def evaluate(self, genomes: Sequence[Any], problem: Any, builds: Any = None, with_baselines: bool = False) -> list:
        return []

    def close(self) -> None:
        pass


NOT_A_CLASS = 42


class BuildingSimulator:
    """The simulator, as a backend that says builds are still running (a GPU evaluator's
    `builds_pending`): the engine logs, when it closes, that it waits for them."""

    simulated = True

    def __init__(self, families: Any = None):
        from evaluator.simulator import SimulatedEvaluator
        self.inner = SimulatedEvaluator(families=families)
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def describe(self) -> str:
        return self.inner.describe()

    def baselines(self, problem: Any) -> Any:
        return self.inner.baselines(problem)

    def evaluate(self, *args: Any, **kwargs: Any) -> list:
        return self.inner.evaluate(*args, **kwargs)

    def builds_pending(self) -> int:
        return 0 if self.closed else 2

    def close(self) -> None:
        self.closed = True
