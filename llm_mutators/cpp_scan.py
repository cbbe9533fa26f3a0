"""A light C++ lexer for the safety checks: the code as the compiler's later phases see it.

`scan` removes comments, joins line splices (a backslash, optional blanks, then a newline, as gcc
and nvcc's front end do) and, unless asked not to, empties string and character literals, keeping
for every character of its output the line it came from. `squeeze_scopes` drops the whitespace
around `::` the same way, so that `std :: thread` reads `std::thread`. Neither is a preprocessor:
macros are left as written (the checks refuse the macros that could hide a name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SPLICE = re.compile(r"\\[ \t\f\v]*(?:\r\n|\r|\n)")
RAW_PREFIXES = ("R", "LR", "uR", "UR", "u8R")


@dataclass
class Scanned:
    text: str
    lines: list[int]                                # the 1-based source line of each character of text
    unterminated: list[tuple[str, int]] = field(default_factory=list)   # (what, line): a comment or raw string left open


def scan_code(text: str, keep_strings: bool = False) -> Scanned:
    """The code without comments (each becomes a space; its newlines stay), with line splices joined
    and, unless `keep_strings`, string and character literals emptied (the quotes stay)."""
    out: list[str] = []
    lines: list[int] = []
    open_: list[tuple[str, int]] = []
    i, n, line = 0, len(text), 1

    def emit(s: str) -> None:
        out.append(s)
        lines.extend([line] * len(s))

    while i < n:
        c = text[i]
        splice = _SPLICE.match(text, i) if c == "\\" else None
        if splice:
            i, line = splice.end(), line + ("\n" in splice.group(0))
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                splice = _SPLICE.match(text, i) if text[i] == "\\" else None
                if splice:
                    line += "\n" in splice.group(0)
                    i = splice.end()
                else:
                    i += 1
            emit(" ")
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                open_.append(("comment /*", line))
            end = n if end < 0 else end + 2
            emit(" ")
            for _ in range(text.count("\n", i, end)):
                emit("\n")
                line += 1
            i = end
        elif c == '"' or (c == "'" and not _digit_separator(text, i)):
            raw = c == '"' and _token_before(text, i) in RAW_PREFIXES
            end, closed = _raw_end(text, i) if raw else (_literal_end(text, i, c), True)
            if not closed:
                open_.append(("raw string", line))
            body = text[i:end]
            if not keep_strings:
                emit(c + c)
                body = "\n" * body.count("\n")
            for ch in body:
                emit(ch)
                line += ch == "\n"
            i = end
        else:
            emit(c)
            if c == "\n":
                line += 1
            i += 1
    return Scanned("".join(out), lines, open_)


def scan(text: str, keep_strings: bool = False) -> "tuple[str, list[int]]":
    """`scan_code`'s text and lines."""
    scanned = scan_code(text, keep_strings)
    return scanned.text, scanned.lines


def squeeze_scopes(text: str, lines: "list[int]") -> "tuple[str, list[int]]":
    """The text with the whitespace around every `::` dropped, and the line of each character kept
    (linear: a scan from each `::`, where a regex would backtrack over long runs of blanks)."""
    out: list[str] = []
    kept: list[int] = []
    last = 0
    colon = text.find("::")
    while colon >= 0:
        start = colon
        while start > last and text[start - 1].isspace():
            start -= 1
        end = colon + 2
        while end < len(text) and text[end].isspace():
            end += 1
        out.append(text[last:start])
        kept.extend(lines[last:start])
        out.append("::")
        kept.extend([lines[colon]] * 2)
        last = end
        colon = text.find("::", end)
    out.append(text[last:])
    kept.extend(lines[last:])
    return "".join(out), kept


def matching_parens(text: str) -> "dict[int, int]":
    """For each '(' of the text, the index of the ')' that closes it (len(text) when none does): one
    pass, where a scan from every '(' would take quadratic time on a patch full of unclosed calls."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            pairs[stack.pop()] = i
    for i in stack:
        pairs[i] = len(text)
    return pairs


def _token_before(text: str, i: int) -> str:
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return text[j:i]


def _digit_separator(text: str, i: int) -> bool:
    token = _token_before(text, i)
    return bool(token) and token[0].isdigit()


def _literal_end(text: str, i: int, quote: str) -> int:
    j = i + 1
    while j < len(text) and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, len(text))


def _raw_end(text: str, i: int) -> "tuple[int, bool]":
    """Where the raw string literal opening at `i` ends, and whether it is closed."""
    open_paren = text.find("(", i)
    if open_paren < 0:
        return _literal_end(text, i, '"'), True
    end = text.find(")" + text[i + 1:open_paren] + '"', open_paren)
    return (len(text), False) if end < 0 else (end + len(text[i + 1:open_paren]) + 2, True)


def close_paren(text: str, open_paren: int) -> int:
    """The index of the parenthesis that closes the one at `open_paren` (len(text) if none)."""
    depth = 0
    for j in range(open_paren, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j
    return len(text)
