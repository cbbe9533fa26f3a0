"""`llm_crossover`: two parents of one family in, one child out.

The prompt (prompts/crossover.j2) shows parent A's source with its editable blocks marked, both
parents' parameters and times, and the text of every editable block in which B's code differs from
A's. The answer is SEARCH/REPLACE edits of A's blocks (format: llm_mutators/edits.py), handled as
`llm_patch` handles them (bounded retry on a SEARCH mismatch or a safety refusal); the child keeps
A's parameters. Parents of different families, or whose editable blocks are the same code, are
refused before any call (OperatorError).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from genome import Genome, OperatorContext, OperatorError
from templates import block_source

from .patch_op import EditOperator, time_of


class LlmCrossover(EditOperator):
    """`llm_crossover` (arity 2): edits of the first parent that take what helps from the second."""

    arity = 2
    template = "crossover.j2"

    def __init__(self, model: str, blocks: Any = None, retries: int = 1, max_tokens: int = 2500,
                 temperature: float = 0.7, name: str = "llm_crossover"):
        super().__init__(model, blocks=blocks, retries=retries, max_tokens=max_tokens, temperature=temperature,
                         name=name)

    def prompt_vars(self, parents: Sequence[Genome], ctx: OperatorContext) -> dict[str, Any]:
        if len(parents) < 2:
            raise OperatorError("invalid", f"{self.name} takes two parents, got {len(parents)}")
        a, b = parents[0], parents[1]
        if a.family != b.family:
            raise OperatorError("family", f"{self.name} needs two parents of one family, got {a.family} and {b.family}")
        differ = [{"name": block, "text": block_source(b, block)} for block in self.editable(a, ctx)
                  if block_source(a, block) != block_source(b, block)]
        if not differ:
            raise OperatorError("same_code", f"parents {a.id} and {b.id} have the same code in every editable block")
        facts = self.facts(a, ctx)
        facts.update(other_json=json.dumps(b.param_dict, sort_keys=True), other_us=time_of(b, ctx.history or {}),
                     other_blocks=differ)
        return facts
