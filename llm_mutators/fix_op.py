"""`llm_fix`: a kernel that FAILED (compile error, gate failure) goes back to the model with an
excerpt of its log; the answer is SEARCH/REPLACE edits, handled as `llm_patch` handles them.

Interface with the engine:
- the operator class says `wants_failed_parents = True`: the engine hands it failed genomes as
  parents (arity 1);
- `ctx.history["failure_of"]` maps genome id -> {"status": str, "reason": str, "log": str} (the
  compiler's or the gate's log, as long as it is). A parent without a record is refused with
  OperatorError("no_failure") before any call is made.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from genome import Genome, OperatorContext, OperatorError

from .patch_op import EditOperator

MAX_LINES = 60
MAX_CHARS = 4000
MAX_LINE_CHARS = 240
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ANCHOR = re.compile(r"\berror\b|\bfatal\b|undefined reference|\bC7510\b|bytes spill|Segmentation fault|"
                     r"[Aa]ssertion|\bFAILED\b|\bmismatch\b", re.I)
_NOT_ANCHOR = re.compile(r"^\s*\d+ errors? detected|^\s*-Werror|\b0 errors?\b", re.I)
_WHERE = re.compile(r"^.*?(?:\(\d+\)|:\d+(?::\d+)?):\s*")  # "file(52): " or "file:52:10: "


def log_excerpt(log: str, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS) -> str:
    """The part of a compile or gate log worth showing: each distinct error line (in log order)
    with the line before it and the first lines after it. Template-instantiation context is cut
    to its first lines and those that point into the kernel's own file; long lines are shortened
    in the middle; the total stays within `max_lines` lines and `max_chars` characters. Without
    any error line, the log's tail."""
    lines = [_ANSI.sub("", x).rstrip() for x in (log or "").replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        return ""
    anchors = [i for i, x in enumerate(lines) if _ANCHOR.search(x) and not _NOT_ANCHOR.search(x)]
    if not anchors:
        return _fit([_short(x) for x in lines[-20:]], max_lines, max_chars, [])
    chunks: list[list[str]] = []
    seen: dict[str, int] = {}
    for n, i in enumerate(anchors):
        key = _WHERE.sub("", lines[i]).strip()
        if key in seen:
            seen[key] += 1
            continue
        seen[key] = 1
        end = anchors[n + 1] if n + 1 < len(anchors) else len(lines)
        chunks.append(_chunk(lines, i, end))
    summary = [x for x in lines if re.match(r"^\s*\d+ errors? detected", x)]
    repeats = sum(v - 1 for v in seen.values())
    tail = ([f"({repeats} repeated error line(s) left out)"] if repeats else []) + summary[-1:]
    return _fit([_short(x) for c in chunks for x in c], max_lines, max_chars, [_short(x) for x in tail],
                n_chunks=[len(c) for c in chunks])


def _chunk(lines: Sequence[str], i: int, end: int) -> list[str]:
    before = [lines[i - 1]] if i > 0 and lines[i - 1].strip() and not _ANCHOR.search(lines[i - 1]) else []
    after: list[str] = []
    for x in lines[i + 1:end]:
        if not x.strip():
            break
        after.append(x)
    kept = after[:3]
    ours = [x for x in after[3:] if "kernel.cu" in x][-2:]
    left = len(after) - len(kept) - len(ours)
    if left > 0:
        kept.append(f"    ... ({left} line(s) of context left out)")
    return before + [lines[i]] + kept + ours


def _short(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    half = (MAX_LINE_CHARS - 7) // 2
    return line[:half] + " [...] " + line[-half:]


def _fit(body: list[str], max_lines: int, max_chars: int, tail: list[str],
         n_chunks: "list[int] | None" = None) -> str:
    """Whole chunks (error + context) while they fit, then a line saying how many were left out."""
    sizes = n_chunks or [1] * len(body)
    out: list[str] = []
    pos = 0
    budget_lines = max_lines - len(tail) - 1
    budget_chars = max_chars - sum(len(x) + 1 for x in tail) - 60
    for k, size in enumerate(sizes):
        piece = body[pos:pos + size]
        if len(out) + len(piece) > budget_lines or sum(len(x) + 1 for x in out + piece) > budget_chars:
            if not out:  # the first chunk alone is too long: keep what fits of it
                for x in piece:
                    if len(out) + 1 > budget_lines or sum(len(y) + 1 for y in out) + len(x) + 1 > budget_chars:
                        break
                    out.append(x)
            out.append(f"... ({len(sizes) - k} more error(s) left out)" if n_chunks else "...")
            break
        out.extend(piece)
        pos += size
    return "\n".join(out + tail)


def failure_of(genome: Genome, history: Mapping[str, Any]) -> dict[str, str]:
    record = (history.get("failure_of") or {}).get(genome.id)
    if not isinstance(record, Mapping):
        raise OperatorError("no_failure", f"genome {genome.id} has no failure record (history['failure_of']); "
                                          "llm_fix works on failed kernels only")
    return {"status": str(record.get("status") or "failed"), "reason": str(record.get("reason") or ""),
            "log": str(record.get("log") or "")}


class LlmFix(EditOperator):
    """`llm_fix`: repair a failed parent with SEARCH/REPLACE edits. See the module docstring."""

    arity = 1
    wants_failed_parents = True
    template = "fix.j2"

    def __init__(self, model: str, blocks: Any = None, retries: int = 1, max_tokens: int = 2000,
                 temperature: float = 0.4, name: str = "llm_fix"):
        super().__init__(model, blocks=blocks, retries=retries, max_tokens=max_tokens, temperature=temperature,
                         name=name)

    def prompt_vars(self, parents: Sequence[Genome], ctx: OperatorContext) -> dict[str, Any]:
        parent = parents[0]
        failure = failure_of(parent, ctx.history or {})
        facts = self.facts(parent, ctx)
        facts.update(failure={"status": failure["status"], "reason": failure["reason"][:600]},
                     log_excerpt=log_excerpt(failure["log"]))
        return facts
