"""`llm_patch`: a model edits named blocks of its parent's kernel with SEARCH/REPLACE edits.

The prompt (prompts/patch.j2) shows the parent's rendered source with its editable blocks marked,
its genome, the shape, the GPU's facts, the measured times against the vendor baselines, the best
kernels so far and recent failures. The answer's edits (format: llm_mutators/edits.py) are applied
to the blocks' current text; each edited block becomes a `Patch` of the child. Edits of a block
outside `blocks` (default: the family's blocks but `abi` and `includes`) are refused; the patched
code must pass the static safety check (llm_mutators/safety.py).

A SEARCH text that does not match, or code that the safety check refuses, is sent back to the
model in the same conversation, with the error (the nearest lines of the block, the rule and the
line), up to `retries` times; after that, or for any other bad answer, `OperatorError`.

`EditOperator` holds what llm_patch, llm_fix and llm_crossover share; they differ in their
prompt and parents.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

from genome import Genome, Offspring, OperatorContext, OperatorError, Patch
from templates import block_source, render

from .edits import MAX_ANSWER_CHARS, NEVER_PATCHABLE, EditError, apply_edits, default_blocks, parse_edits
from .param_op import prompt_environment
from .safety import RULES_TEXT, UnsafeCode, check_genome

SYSTEM = ("You are an expert CUDA and CUTLASS performance engineer. You change kernels only with "
          "SEARCH/REPLACE edits of the named blocks you are shown.")
MAX_SOURCE_CHARS = 40_000


class EditOperator:
    """Ask a model for SEARCH/REPLACE edits of the first parent; see the module docstring."""

    arity = 1
    template = "patch.j2"

    def __init__(self, model: str, blocks: "Iterable[str] | None" = None, retries: int = 1, max_tokens: int = 2000,
                 temperature: float = 0.7, name: str = "llm_patch"):
        if isinstance(blocks, str):
            blocks = [blocks]
        self.blocks = tuple(blocks) if blocks is not None else None
        bad = sorted(set(self.blocks or ()) & NEVER_PATCHABLE)
        if bad:
            raise ValueError(f"{name}: block(s) {', '.join(bad)} may never be patched (the C ABI)")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ValueError(f"{name}: retries must be an integer >= 0, got {retries!r}")
        self.model, self.retries, self.name = model, retries, name
        self.max_tokens, self.temperature = int(max_tokens), float(temperature)
        self._template = prompt_environment().get_template(self.template)

    # -- what the prompt shows --------------------------------------------------------------------
    def editable(self, genome: Genome, ctx: OperatorContext) -> tuple[str, ...]:
        space = ctx.space_of(genome)
        if self.blocks is None:
            return default_blocks(space.blocks)
        return tuple(b for b in self.blocks if b in space.blocks)

    @staticmethod
    def source_of(genome: Genome, ctx: OperatorContext) -> str:
        return ctx.render(genome) if ctx.render is not None else render(genome).source

    def facts(self, parent: Genome, ctx: OperatorContext) -> dict[str, Any]:
        """The prompt variables every editing operator shows for its (first) parent."""
        history = dict(ctx.history or {})
        best = history.get("best", []) or []
        gpu = history.get("gpu")
        if isinstance(gpu, Mapping):
            gpu = ", ".join(f"{k}: {v}" for k, v in gpu.items())
        blocks = self.editable(parent, ctx)
        if not blocks:
            raise OperatorError("no_blocks", f"{self.name} may edit none of family {parent.family}'s blocks "
                                             f"({', '.join(ctx.space_of(parent).blocks)}); it names "
                                             f"{', '.join(self.blocks or ())}")
        return {
            "family": parent.family, "gpu": gpu or "NVIDIA Hopper (sm_90a)", "problem": ctx.problem,
            "best_vendor_us": history.get("best_vendor_us"), "baselines": dict(history.get("baselines") or {}),
            "parent_json": json.dumps(parent.param_dict, sort_keys=True),
            "parent_us": time_of(parent, history), "patched": [p.block for p in parent.patches],
            "frozen": sorted(ctx.frozen_of(parent)),
            "best": [{"time_us": b["time_us"], "params": json.dumps(b["genome"]["params"], sort_keys=True),
                      "patched": [p.get("block") for p in b["genome"].get("patches", [])]}
                     for b in best[:5] if b.get("genome", {}).get("family") == parent.family],
            "failures": [{"status": f.get("status"), "reason": (f.get("reason") or "")[:200]}
                         for f in (history.get("recent_failures") or [])[-3:]],
            "source": annotated_source(self.source_of(parent, ctx), parent, blocks),
            "blocks": blocks, "safety_rules": RULES_TEXT,
        }

    def prompt_vars(self, parents: Sequence[Genome], ctx: OperatorContext) -> dict[str, Any]:
        return self.facts(parents[0], ctx)

    def messages(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[dict[str, str]]:
        text = self._template.render(**self.prompt_vars(parents, ctx))
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]

    # -- what the answer becomes ----------------------------------------------------------------
    def child(self, text: str, parent: Genome, ctx: OperatorContext) -> tuple[Genome, str]:
        """The patched child, or EditError / UnsafeCode / OperatorError."""
        edits = parse_edits(text)
        new = apply_edits(edits, lambda block: block_source(parent, block), self.editable(parent, ctx))
        note = reason_of(text)
        child = parent
        for block in sorted(new):
            child = child.with_patch(Patch(block, new[block], note=note))
        try:
            refusals = check_genome(child, lambda g: self.source_of(g, ctx))
        except (KeyError, ValueError) as exc:
            raise OperatorError("invalid", f"the patched kernel does not render: {exc}") from exc
        if refusals:
            raise UnsafeCode(refusals)
        return child, note

    def ask(self, parents: Sequence[Genome], ctx: OperatorContext) -> tuple[Genome, str, dict[str, Any]]:
        if ctx.llm is None:
            raise OperatorError("unavailable", "no LLM gateway: the campaign names no llm.providers")
        messages = self.messages(parents, ctx)
        keys: list[Any] = []
        tokens, attempt = 0, 0
        while True:
            result = ctx.llm(self.model, messages, max_tokens=self.max_tokens, temperature=self.temperature)
            keys.append(getattr(result, "key", None))
            tokens += int(getattr(result, "tokens", 0) or 0)
            try:
                child, note = self.child(result.text, parents[0], ctx)
            except (EditError, UnsafeCode) as exc:
                kind = "unsafe" if isinstance(exc, UnsafeCode) else exc.kind
                if kind not in ("mismatch", "unsafe") or attempt >= self.retries:
                    tried = f" (after {attempt + 1} answers)" if attempt else ""
                    raise OperatorError(kind, f"{exc}{tried}") from exc
                messages = [*messages, {"role": "assistant", "content": result.text[:MAX_ANSWER_CHARS]},
                            {"role": "user", "content": feedback(exc)}]
                attempt += 1
                continue
            meta = {"model": self.model, "tokens": tokens, "llm_call": keys[-1], "llm_calls": keys,
                    "answers": attempt + 1, "blocks": sorted(p.block for p in child.patches)}
            return child, note, meta

    def __call__(self, parents: Sequence[Genome], ctx: OperatorContext) -> list[Offspring]:
        child, note, meta = self.ask(parents, ctx)
        return [Offspring(child, self.name, tuple(p.id for p in parents[:self.arity]),
                          note=note or f"{self.name}: edited {', '.join(meta['blocks'])}", meta=meta)]


class LlmPatch(EditOperator):
    """`llm_patch`: SEARCH/REPLACE edits of the parent's blocks (arity 1)."""


def time_of(genome: Genome, history: Mapping[str, Any]) -> "float | None":
    """The genome's measured time, where the engine's summary has it."""
    times = history.get("times") or {}
    if genome.id in times:
        return float(times[genome.id])
    return next((b["time_us"] for b in history.get("best", []) or []
                 if b.get("genome", {}).get("id") == genome.id), None)


def annotated_source(source: str, genome: Genome, blocks: Sequence[str]) -> str:
    """The rendered source with each editable block between marker comments. A block whose text
    is not found exactly once in the source is listed after it instead."""
    later = []
    for block in blocks:
        text = block_source(genome, block)
        if text.strip() and source.count(text) == 1:
            source = source.replace(text, f"// >>> block {block} (editable)\n{text}\n// <<< end of block {block}", 1)
        else:
            later.append(f"// >>> block {block} (editable)\n{text}\n// <<< end of block {block}")
    out = "\n\n".join([source.rstrip("\n"), *later])
    if len(out) > MAX_SOURCE_CHARS:
        out = out[:MAX_SOURCE_CHARS] + "\n// ... (source cut)"
    return out


def reason_of(text: str) -> str:
    """The answer's first line of prose (the prompt asks for one sentence first), for the note."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("```", "<<<", "===", ">>>")) or len(line.split()) < 3:
            if line.startswith("<<<"):
                break
            continue
        return line[:200]
    return ""


def feedback(exc: Exception) -> str:
    if isinstance(exc, UnsafeCode):
        lines = "\n".join(f"- {r}" for r in exc.refusals)
        return (f"The patched kernel was refused by the safety check:\n{lines}\n"
                "Answer again with SEARCH/REPLACE edits that keep to the rules.")
    return f"Your edits could not be applied: {exc}\nAnswer again with corrected SEARCH/REPLACE edits."
