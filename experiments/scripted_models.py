"""LLM "models" of known quality for the arm ablation (experiments/ablation_arms.py): a provider
that reads an llm_param prompt and answers like a good, a mediocre or a broken model, deterministic
from its seed, the request and how many times the request was made before.

- good: of `candidates` random valid moves of the parent, the one the simulator's noise-free model
  rates fastest; with `jumps` > 0 it also weighs that many genomes drawn from the whole space (valid
  at the shape), as an expert who knows which tiles suit a shape proposes a new region and not only
  a step from the parent;
- mediocre: one random valid move;
- broken: one of five kinds of garbage (prose, truncated JSON, unknown or ill-typed parameters, an
  empty move); llm_param refuses every one, so it costs an operator call but no evaluation;
- misleading: the other kind of bad model, plausible but wrong: of `candidates` random valid moves
  of the parent, the one the simulator's noise-free model rates slowest. llm_param accepts it, so
  each answer costs an evaluation, as a weak real model's confident bad suggestions do.

The ablation's third arm is one of the two bad kinds, or both are (`BROKEN_KINDS`, see `arm_qualities`).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from typing import Any, Mapping

from llm_mutators.chat import ChatResult, ProviderError, check_messages, messages_key

QUALITIES = ("good", "mediocre", "broken", "misleading")
# the ablation's bad arm: `garbage` is the `broken` model (refused answers), `misleading` the
# `misleading` one (valid but bad moves)
BROKEN_KINDS = {"garbage": ("broken",), "misleading": ("misleading",), "both": ("broken", "misleading")}
RANKED = {"good": False, "misleading": True}    # qualities that rank candidates: reverse (slowest first)?


def arm_qualities(broken: str = "garbage") -> tuple[str, ...]:
    """The scripted models of the ablation: good, mediocre and the bad kind(s) `broken` names (both: a
    garbage and a misleading model, four models)."""
    if broken not in BROKEN_KINDS:
        raise ValueError(f"ablation: broken must be one of {', '.join(BROKEN_KINDS)}, got {broken!r}")
    return ("good", "mediocre", *BROKEN_KINDS[broken])
_FAMILY = re.compile(r"You tune (\S+) HGEMM kernels")
_SHAPE = re.compile(r"M=(\d+), N=(\d+), K=(\d+)")


def read_prompt(text: str) -> tuple[str, Any, dict[str, Any]]:
    """(family, problem, parent params) of an llm_param prompt, or ProviderError."""
    from genome import Problem
    family, shape = _FAMILY.search(text), _SHAPE.search(text)
    at = text.find("The parent kernel")
    start = text.find("{", at) if at >= 0 else -1
    if not family or not shape or start < 0:
        raise ProviderError("bad_response", "not an llm_param prompt (no family, shape or parent kernel in it)")
    try:
        parent, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as exc:
        raise ProviderError("bad_response", f"the prompt's parent kernel is not JSON ({exc})") from None
    return family.group(1), Problem(*(int(g) for g in shape.groups())), parent


class ScriptedModel:
    """An LLM provider of known quality for llm_param prompts. See the module docstring."""

    def __init__(self, name: str, model: str, quality: str = "mediocre", seed: int = 0, candidates: int = 4,
                 jumps: int = 0, base_url: "str | None" = None, api_key_env: "str | None" = None):
        if quality not in QUALITIES:
            raise ValueError(f"provider {name!r}: quality must be one of {', '.join(QUALITIES)}, got {quality!r}")
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise ValueError(f"provider {name!r}: candidates must be a whole number >= 1, got {candidates!r}")
        if isinstance(jumps, bool) or not isinstance(jumps, int) or jumps < 0:
            raise ValueError(f"provider {name!r}: jumps must be a whole number >= 0, got {jumps!r}")
        self.name, self.model, self.quality, self.seed, self.candidates = name, model, quality, int(seed), candidates
        self.jumps = jumps if quality == "good" else 0
        self._lock = threading.Lock()
        self._repeats: dict[tuple[int, str], int] = {}
        self._sim: Any = None

    def _rng(self, key: str, seed: "int | None") -> random.Random:
        seed = self.seed if seed is None else int(seed)
        with self._lock:
            n = self._repeats.get((seed, key), 0)
            self._repeats[(seed, key)] = n + 1
        digest = hashlib.sha256(f"{seed}|{self.model}|{self.quality}|{key}|{n}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "little"))

    def complete(self, messages: Any, max_tokens: int = 1024, temperature: float = 0.7,
                 seed: "int | None" = None) -> ChatResult:
        msgs = check_messages(messages)
        prompt = "\n".join(m["content"] for m in msgs)
        rng = self._rng(messages_key(self.model, msgs), seed)
        if self.quality == "broken":
            text = self._garbage(prompt, rng)
        else:
            family, problem, parent = read_prompt(prompt)
            text = json.dumps(self._move(family, problem, parent, rng))
        # usage: words, a stand-in for tokens (no tokenizer here)
        return ChatResult(text=text, model=self.model, prompt_tokens=len(prompt.split()),
                          completion_tokens=len(text.split()), finish_reason="stop")

    def _move(self, family: str, problem: Any, parent_params: Mapping[str, Any], rng: random.Random) -> dict:
        from genome import Genome
        from templates import get_space
        space = get_space(family)
        parent = Genome.make(family, dict(parent_params))
        moves: list[Genome] = []
        for _ in range(50 * self.candidates):
            child = space.mutate(parent, rng, n_changes=rng.randint(1, 3))
            if child.id != parent.id and space.is_valid(child, problem) and child not in moves:
                moves.append(child)
                if len(moves) == (self.candidates if self.quality in RANKED else 1):
                    break
        jumped = 0
        for _ in range(50 * self.jumps):
            if jumped == self.jumps:
                break
            child = space.sample(rng)
            if child.id != parent.id and space.is_valid(child, problem) and child not in moves:
                moves.append(child)
                jumped += 1
        if not moves:
            raise ProviderError("bad_response", f"no valid move of the parent for {problem.name}")
        if self.quality in RANKED:    # fastest first (good) or slowest first (misleading); ties by id
            sign = -1.0 if RANKED[self.quality] else 1.0
            moves.sort(key=lambda g: (sign * self._time(g, problem), g.id))
        pick = moves[0]
        before = space.params_of(parent)  # implicit parameters included: a move may reset one to its default
        diff = {k: v for k, v in space.params_of(pick).items() if before.get(k) != v}
        return {"params": diff, "reason": f"{self.quality} move of {len(diff)} parameter(s)"}

    def _time(self, genome: Any, problem: Any) -> float:
        from evaluator.simulator import SimulatedEvaluator
        if self._sim is None:
            self._sim = SimulatedEvaluator()
        return self._sim.predict_us(genome, problem)

    @staticmethod
    def _garbage(prompt: str, rng: random.Random) -> str:
        names = re.findall(r"^- (\w+) \((?:compile|runtime)\)", prompt, re.M) or ["tile_n"]
        kinds = ["I would make the tiles larger and use more pipeline stages to hide latency.",
                 '{"params": {"' + rng.choice(names) + '": 12',
                 json.dumps({"params": {"warp_count": rng.choice([3, 5, 7])}, "reason": "more warps"}),
                 json.dumps({"params": {rng.choice(names): "fastest"}, "reason": "faster"}),
                 json.dumps({"params": {}, "reason": "the parent is already optimal"})]
        return rng.choice(kinds)
