"""`llm_param`: a model proposes a parameter move of its parent, as JSON, within the space's
schema. The prompt (prompts/param.j2) shows the family's parameters with their allowed values and
rules, the shape, the parent and its time, the best kernels so far and recent failures.

The answer must be one JSON object {"params": {...}, "reason": "..."} (code fences allowed) that
names known parameters with allowed values; anything else (no JSON, unknown names, values outside
the choices, an answer too long) is refused with the reason (`OperatorError`), which the engine
credits to the operator's arm.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import jinja2

from genome import Genome, Offspring, OperatorContext, OperatorError

PROMPTS = Path(__file__).resolve().parent / "prompts"
MAX_ANSWER_CHARS = 4000
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def prompt_environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(PROMPTS)), undefined=jinja2.StrictUndefined,
                              autoescape=False, keep_trailing_newline=True)


def first_json_object(text: str) -> dict:
    """The first JSON object in an answer (inside a code fence or bare), or OperatorError."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for chunk in candidates:
        start = chunk.find("{")
        while start != -1:
            try:
                obj, _ = json.JSONDecoder().raw_decode(chunk[start:])
            except ValueError:
                start = chunk.find("{", start + 1)
                continue
            if isinstance(obj, dict):
                return obj
            start = chunk.find("{", start + 1)
    raise OperatorError("garbage", f"no JSON object in the answer: {text[:120]!r}")


class LlmParam:
    """Parameter moves proposed by a model. See the module docstring."""

    arity = 1

    def __init__(self, model: str, max_tokens: int = 400, temperature: float = 0.7, name: str = "llm_param"):
        self.model, self.max_tokens, self.temperature, self.name = model, int(max_tokens), float(temperature), name
        self._template = prompt_environment().get_template("param.j2")

    def messages(self, parent: Genome, ctx: OperatorContext) -> list[dict[str, str]]:
        space, history = ctx.space, dict(ctx.history or {})
        best = [{"time_us": b["time_us"], "params": json.dumps(b["genome"]["params"], sort_keys=True)}
                for b in history.get("best", [])[:5] if b.get("genome", {}).get("family") == space.family]
        parent_us = (history.get("times") or {}).get(parent.id) or next(
            (b["time_us"] for b in history.get("best", []) if b.get("genome", {}).get("id") == parent.id), None)
        text = self._template.render(
            family=space.family, gpu=history.get("gpu", "H100/H200 (sm_90a)"), problem=ctx.problem,
            best_vendor_us=history.get("best_vendor_us"), baselines=dict(history.get("baselines") or {}),
            params=[{"name": p.name, "kind": p.kind, "choices": [str(c) for c in p.choices], "doc": p.doc}
                    for p in space.params],
            rules=[r.description for r in space.rules], parent_json=json.dumps(parent.param_dict, sort_keys=True),
            parent_us=parent_us, best=best, frozen=sorted(ctx.frozen_of(parent)),
            patched=[patch.block for patch in parent.patches],
            failures=[{"status": f.get("status"), "reason": (f.get("reason") or "")[:200]}
                      for f in history.get("recent_failures", [])[-3:]])
        return [{"role": "system", "content": "You are an expert CUDA performance engineer. Answer in JSON only."},
                {"role": "user", "content": text}]

    def parse(self, text: str, parent: Genome, ctx: OperatorContext) -> tuple[Genome, str]:
        if len(text) > MAX_ANSWER_CHARS:
            raise OperatorError("garbage", f"answer of {len(text)} characters (at most {MAX_ANSWER_CHARS})")
        obj = first_json_object(text)
        moves = obj.get("params")
        if not isinstance(moves, dict) or not moves:
            raise OperatorError("garbage", "the JSON has no non-empty \"params\" object")
        space = ctx.space
        unknown = sorted(set(moves) - set(space.names))
        if unknown:
            raise OperatorError("invalid", f"unknown parameter(s) {', '.join(map(repr, unknown))}; "
                                           f"known: {', '.join(space.names)}")
        params = space.params_of(parent)
        frozen = ctx.frozen_of(parent)
        for name, value in moves.items():
            choices = space.spec(name).choices
            match = next((c for c in choices if c == value or str(c) == str(value)), None)
            if match is None:
                raise OperatorError("invalid", f"{name}={value!r} is not allowed; choices: "
                                               f"{', '.join(map(str, choices))}")
            if name in frozen and match != params[name]:
                raise OperatorError("frozen", f"{name} is fixed at {params[name]!r} by this kernel's code patch "
                                              f"(block(s) {', '.join(p.block for p in parent.patches)}); "
                                              f"fixed parameters: {', '.join(sorted(frozen))}")
            params[name] = match
        reason = obj.get("reason")
        return Genome.make(space.family, params, parent.patches), str(reason)[:300] if reason else ""

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        if ctx.llm is None:
            raise OperatorError("unavailable", "no LLM gateway: the campaign names no llm.providers")
        parent = parents[0]
        result = ctx.llm(self.model, self.messages(parent, ctx), max_tokens=self.max_tokens,
                         temperature=self.temperature)
        child, reason = self.parse(result.text, parent, ctx)
        meta: dict[str, Any] = {"model": self.model, "tokens": result.tokens, "llm_call": getattr(result, "key", None)}
        return [Offspring(child, self.name, (parent.id,), note=reason or "llm parameter move", meta=meta)]
