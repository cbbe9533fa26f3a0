"""SEARCH/REPLACE edits of named template blocks: read them from a model's answer, apply them.

The format (the prompt teaches it; code fences around it are ignored):

    tile_config
    <<<<<<< SEARCH
    lines copied exactly from the block's current text
    =======
    the lines that replace them
    >>>>>>> REPLACE

- The line before `<<<<<<< SEARCH` (blank and ``` lines skipped) names the block: `tile_config`,
  also written `block: tile_config`, `### tile_config` or `**tile_config**`. An edit without such a
  line edits the block of the edit before it. Markers are 5 or more `<`, `=`, `>` (7 are taught).
- SEARCH must quote one or more whole lines of the block's current text, exactly; only trailing
  whitespace is ignored. It must match exactly once. Edits apply in order, each to the text the
  previous ones left; REPLACE may be empty (the lines are deleted).
- A SEARCH that does not match raises `EditError("mismatch")` quoting the block's nearest lines
  (difflib), which the operator sends back to the model.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

MAX_ANSWER_CHARS = 24_000
MAX_BLOCK_CHARS = 32_000
NEVER_PATCHABLE = frozenset({"abi"})
NOT_PATCHABLE_BY_DEFAULT = frozenset({"abi", "includes"})

_SEARCH = re.compile(r"^\s*<{5,}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,}\s*$")
_REPLACE = re.compile(r"^\s*>{5,}\s*REPLACE\s*$")
_FENCE = re.compile(r"^\s*```[\w+-]*\s*$")
_NAME = re.compile(r"^\s*(?:#+\s*)?[*`]*\s*(?:block\s*[:=]?\s*)?[*`]*([A-Za-z_]\w*)[*`]*\s*:?\s*$", re.I)


@dataclass(frozen=True)
class Edit:
    block: str
    search: str
    replace: str


class EditError(ValueError):
    """An answer whose edits cannot be used. `kind`: empty, oversized, format, block, mismatch,
    noop. Only `mismatch` is worth sending back to the model."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def default_blocks(space_blocks: Iterable[str]) -> tuple[str, ...]:
    """The blocks an LLM may edit unless the operator names others: all but abi and includes."""
    return tuple(b for b in space_blocks if b not in NOT_PATCHABLE_BY_DEFAULT)


def parse_edits(text: str, max_chars: int = MAX_ANSWER_CHARS) -> list[Edit]:
    """Every SEARCH/REPLACE edit in an answer, in order, or EditError."""
    if not isinstance(text, str) or not text.strip():
        raise EditError("empty", "the answer is empty")
    if len(text) > max_chars:
        raise EditError("oversized", f"answer of {len(text)} characters (at most {max_chars})")
    lines = text.replace("\r\n", "\n").split("\n")
    edits: list[Edit] = []
    block: "str | None" = None
    i = 0
    while i < len(lines):
        if not _SEARCH.match(lines[i]):
            if _DIVIDER.match(lines[i]) or _REPLACE.match(lines[i]):
                raise EditError("format", f"line {i + 1}: {lines[i].strip()!r} outside a SEARCH/REPLACE edit")
            i += 1
            continue
        named = _name_before(lines, i)
        block = named or block
        if block is None:
            raise EditError("format", f"edit {len(edits) + 1} (line {i + 1}) names no block: put the block's "
                                      "name on the line before <<<<<<< SEARCH")
        j = _find(lines, i + 1, _DIVIDER, f"edit {len(edits) + 1} of block {block} has no ======= line")
        k = _find(lines, j + 1, _REPLACE, f"edit {len(edits) + 1} of block {block} has no >>>>>>> REPLACE line")
        search, replace = "\n".join(lines[i + 1:j]), "\n".join(lines[j + 1:k])
        if any(_SEARCH.match(x) for x in lines[i + 1:j]) or any(_SEARCH.match(x) or _DIVIDER.match(x)
                                                                 for x in lines[j + 1:k]):
            raise EditError("format", f"edit {len(edits) + 1} of block {block} is not closed before the next one")
        if not search.strip():
            raise EditError("format", f"edit {len(edits) + 1} of block {block}: SEARCH is empty; it must quote "
                                      "at least one line of the block")
        edits.append(Edit(block, search, replace))
        i = k + 1
    if not edits:
        raise EditError("format", "no SEARCH/REPLACE edit in the answer: " + repr(text[:120]))
    return edits


def _name_before(lines: Sequence[str], i: int) -> "str | None":
    for line in reversed(lines[:i]):
        if not line.strip() or _FENCE.match(line):
            continue
        if _REPLACE.match(line):
            return None
        m = _NAME.match(line)
        return m.group(1) if m else None
    return None


def _find(lines: Sequence[str], start: int, pattern: "re.Pattern[str]", missing: str) -> int:
    for n in range(start, len(lines)):
        if pattern.match(lines[n]):
            return n
    raise EditError("format", missing)


def apply_edits(edits: Sequence[Edit], current: "Callable[[str], str] | Mapping[str, str]",
                allowed: Iterable[str]) -> dict[str, str]:
    """The new text of every block the edits touch, or EditError. `current(block)` (or a mapping)
    gives a block's text now; a block outside `allowed` is refused before anything is applied."""
    allowed = tuple(allowed)
    for edit in edits:
        if edit.block not in allowed:
            raise EditError("block", f"block {edit.block!r} may not be edited; editable blocks: "
                                     f"{', '.join(allowed) or '(none)'}")
    read = current.__getitem__ if isinstance(current, Mapping) else current
    texts: dict[str, str] = {}
    originals: dict[str, str] = {}
    for n, edit in enumerate(edits, 1):
        if edit.block not in texts:
            try:
                texts[edit.block] = originals[edit.block] = read(edit.block)
            except KeyError as exc:
                raise EditError("block", f"block {edit.block!r} is not in the kernel: {exc}") from exc
        texts[edit.block] = apply_one(texts[edit.block], edit, n)
        if len(texts[edit.block]) > MAX_BLOCK_CHARS:
            raise EditError("oversized", f"block {edit.block} would be {len(texts[edit.block])} characters "
                                         f"(at most {MAX_BLOCK_CHARS})")
    changed = {b: t for b, t in texts.items() if t != originals[b]}
    if not changed:
        raise EditError("noop", "the edits change nothing")
    return changed


def apply_one(text: str, edit: Edit, n: int = 1) -> str:
    lines = text.split("\n")
    want = [x.rstrip() for x in edit.search.split("\n")]
    have = [x.rstrip() for x in lines]
    hits = [i for i in range(len(have) - len(want) + 1) if have[i:i + len(want)] == want]
    if len(hits) == 1:
        i = hits[0]
        return "\n".join(lines[:i] + edit.replace.split("\n") + lines[i + len(want):])
    if hits:
        raise EditError("mismatch", f"edit {n}: the SEARCH text matches {len(hits)} places of block {edit.block} "
                                    f"(lines {', '.join(str(i + 1) for i in hits)}); quote more lines so it matches one")
    raise EditError("mismatch", f"edit {n}: the SEARCH text is not in block {edit.block}. The nearest lines of "
                                f"the block are:\n{nearest_lines(text, edit.search)}\nSEARCH must copy them "
                                "exactly (only trailing spaces may differ).")


def nearest_lines(text: str, search: str, context: int = 1) -> str:
    """The block's lines most like `search` (difflib), numbered, with `context` lines around."""
    lines = text.split("\n")
    want = [x.strip() for x in search.split("\n")]
    size = max(1, min(len(want), len(lines)))
    joined = "\n".join(want)

    def score(i: int) -> float:
        window = "\n".join(x.strip() for x in lines[i:i + size])
        return difflib.SequenceMatcher(None, joined, window, autojunk=False).ratio()

    best = max(range(len(lines) - size + 1), key=lambda i: (score(i), -i))
    lo, hi = max(0, best - context), min(len(lines), best + size + context)
    return "\n".join(f"{n + 1:4d} | {lines[n]}" for n in range(lo, hi))
