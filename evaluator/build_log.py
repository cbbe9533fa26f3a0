"""What of a compiler log is worth showing: to a person reading a failed build, and to a model
asked to fix the code (llm_fix). nvcc's messages for one CUTLASS template error run to thousands of
lines of "instantiation of ..."; the excerpt keeps each distinct error with its source lines and a
short instantiation chain, in the order nvcc reported them, within ~200 lines / 16 KB."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

_ERROR = re.compile(r"\berror\b|\bfatal\b|undefined reference", re.I)
_INSTANTIATION = re.compile(r"detected during|instantiation of|required from|In instantiation|In member function"
                            r"|In function|note:", re.I)
EXCERPT_LINES = 200
EXCERPT_BYTES = 16 * 1024
_LINE_CHARS = 600      # one line of a template error can run to thousands of characters
_CONTEXT_AFTER = 8     # source and caret lines kept after an error line


def _clip(line: str) -> str:
    line = line.rstrip()
    return line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + f" [... {len(line) - _LINE_CHARS} chars]"


def _error_block(lines: Sequence[str], i: int) -> tuple[list[str], int]:
    """The error at line i with the source lines after it, its template-instantiation chain cut
    to its first two lines and the last ones that point at the kernel's own source; the index of
    the line after the block."""
    kept, chain = [_clip(lines[i])], []
    j = i + 1
    while j < len(lines) and lines[j].strip() and not (_ERROR.search(lines[j])
                                                      and not _INSTANTIATION.search(lines[j])):
        if _INSTANTIATION.search(lines[j]) or chain:
            chain.append(lines[j])
        elif len(kept) <= _CONTEXT_AFTER:
            kept.append(_clip(lines[j]))
        j += 1
    if chain:
        own = [ln for ln in chain[2:] if "kernel.cu" in ln][-2:]
        omitted = len(chain) - 2 - len(own)
        kept += [_clip(ln) for ln in chain[:2]]
        if omitted > 0:
            kept.append(f"            [... {omitted} instantiation line(s) omitted]")
        kept += [_clip(ln) for ln in own]
    return kept, j


def log_excerpt(output: str, max_lines: int = EXCERPT_LINES, max_bytes: int = EXCERPT_BYTES) -> str:
    """The part of a compiler log worth showing (to a person, or to a model asked to fix the code):
    each distinct error with its source lines and a short template-instantiation chain, in the
    order nvcc reported them, then nvcc's summary line; at most `max_lines` lines and `max_bytes`
    bytes, with what was left out counted. A log without error lines gives its last 40 lines
    (ptxas reports, a linker message)."""
    lines = output.splitlines()
    errors = [i for i, ln in enumerate(lines) if _ERROR.search(ln) and not _INSTANTIATION.search(ln)
              and "errors detected" not in ln and "error detected" not in ln]
    summary = [_clip(ln) for ln in lines if re.search(r"\berrors? detected in the compilation", ln)]
    if not errors:
        tail = [_clip(ln) for ln in lines if ln.strip()][-40:]
        return _capped(tail, max_lines, max_bytes, 0)
    out: list[str] = []
    seen: set[str] = set()
    skipped = 0
    cursor = 0
    for i in errors:
        if i < cursor:
            continue
        block, cursor = _error_block(lines, i)
        message = re.sub(r"^\S*\(\d+\):\s*|^\S*:\d+:\d+:\s*", "", lines[i].strip())
        if message in seen:  # the same error again, from another instantiation
            skipped += 1
            continue
        if len(out) + len(block) + len(summary) > max_lines or \
                sum(len(ln) + 1 for ln in out + block + summary) > max_bytes:
            skipped += 1
            continue
        seen.add(message)
        out += block + [""]
    return _capped(out + summary, max_lines, max_bytes, skipped)


def _capped(lines: list[str], max_lines: int, max_bytes: int, skipped: int) -> str:
    out, size = [], 0
    for ln in lines[:max_lines]:
        if size + len(ln) + 1 > max_bytes:
            break
        out.append(ln)
        size += len(ln) + 1
    text = "\n".join(out).strip("\n")
    if skipped:
        text += f"\n[... {skipped} more error(s) not shown]"
    return text


def read_log_excerpt(path: "str | Path | None") -> "str | None":
    """The excerpt of a kept build log (its first paragraph, the nvcc command, left out); None
    when there is no log."""
    try:
        text = Path(path).read_text(errors="replace") if path else None
    except OSError:
        text = None
    if not text:
        return None
    head, sep, rest = text.partition("\n\n")
    return log_excerpt(rest if sep else text) or None
