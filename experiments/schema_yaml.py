"""Reading a campaign file and turning validation errors into readable lines.

- `read_campaign_file(path)`: the text and data of a YAML file, refusing a key given twice in one
  mapping; a missing, unreadable, binary, non-UTF-8 or malformed file raises `CampaignError`
  naming the file (and the line and column where YAML says so).
- `format_errors(exc, root, data, lines)`: one line per pydantic error,
  `path: value is not allowed: why (line N)` or `path: unknown key; allowed: ...`.
- `at(loc, message)`: a message from a model-level validator that belongs to one key
  (`at("suite.path", "... not found")`); `format_errors` reports it under that key.

This module knows nothing of the campaign models (the root model is passed in).
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml
from pydantic import BaseModel, ValidationError


class CampaignError(ValueError):
    """A campaign file that cannot run: `errors` holds one readable line per problem."""

    def __init__(self, errors: "list[str]", source: "str | None" = None):
        self.errors = list(errors)
        self.source = source
        head = f"{source}: " if source else ""
        if len(self.errors) == 1:
            super().__init__(head + self.errors[0])
        else:
            super().__init__(f"{head}{len(self.errors)} problems\n" + "\n".join("  " + e for e in self.errors))

    def __reduce__(self) -> tuple:  # survive pickling (process pools)
        return (type(self), (self.errors, self.source))


def one_line(text: str) -> str:
    """`text` with its line breaks (and the indentation after them) folded into single spaces."""
    return re.sub(r"\s*\n\s*", " ", str(text)).strip()


def at(loc: str, message: str) -> str:
    """A validator message that `format_errors` reports under the key path `loc`."""
    return f"__loc__{loc}__{message}"


# -- reading YAML ---------------------------------------------------------------------------------

class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark, f"found the key {key!r} twice", key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def yaml_message(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: where (line, column) and what."""
    if isinstance(exc, yaml.reader.ReaderError):
        return f"not a YAML text file: {_reader_problem(exc)}"
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    detail = f"{context}: {problem}" if context and "twice" in str(problem) else problem
    return one_line(f"{where}YAML syntax error: {detail}")


def _reader_problem(exc: "yaml.reader.ReaderError") -> str:
    char = exc.character  # the code point (text input) or the byte
    code = ord(char) if isinstance(char, str) else char
    return f"{exc.reason}: character #x{code:04x} at offset {exc.position}"


def read_campaign_file(path: Path) -> "tuple[str, Any]":
    """(text, data) of a campaign file; every way it cannot be read is a CampaignError naming it."""
    if not path.exists():
        raise CampaignError([f"no such campaign file: {path}"])
    if path.is_dir():
        raise CampaignError(["is a folder, not a campaign YAML file"], str(path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CampaignError([f"cannot read the campaign file: {exc.strerror or exc}"], str(path)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CampaignError([f"not a UTF-8 text file (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                             "a campaign is a YAML text file"], str(path)) from None
    if "\x00" in text:
        raise CampaignError([f"a binary file (NUL byte at offset {text.index(chr(0))}), not a campaign YAML "
                             "text file"], str(path))
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.reader.ReaderError as exc:
        raise CampaignError([f"not a YAML text file: {_reader_problem(exc)}"], str(path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise CampaignError([one_line(f"YAML syntax error: {problem}")], where) from None
    except RecursionError:
        raise CampaignError(["YAML nested too deeply to read"], str(path)) from None
    return text, data


def yaml_lines(text: str) -> dict[str, int]:
    """Map location paths ('population.size', 'shapes[1]') to 1-based line numbers."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return {}
    out: dict[str, int] = {}

    def walk(node: Any, loc: tuple[Any, ...]) -> None:
        out[fmt_loc(loc)] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value
                walk(v, loc + (key,))
                out[fmt_loc(loc + (key,))] = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                walk(v, loc + (i,))

    if root is not None:
        walk(root, ())
    return out


# -- error lines ----------------------------------------------------------------------------------

def fmt_loc(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def fmt_value(value: Any) -> str:
    try:
        text = json.dumps(value) if not isinstance(value, str) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    text = one_line(text)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def model_at(root: "type[BaseModel]", loc: "tuple[Any, ...]") -> "type[BaseModel] | None":
    """The model class at a location path below `root` (to list the keys allowed there)."""
    model: Any = root
    for part in loc:
        if isinstance(part, int):
            continue
        if not _is_model(model) or part not in model.model_fields:
            return None
        model = _unwrap(model.model_fields[part].annotation)
    return model if _is_model(model) else None


def _unwrap(ann: Any) -> Any:
    for _ in range(4):
        if _is_model(ann):
            return ann
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if not args:
            return ann
        models = [a for a in args if _is_model(a)]
        ann = models[0] if models else args[-1]
    return ann


_CONSTRAINT_TEXT = {
    "greater_than_equal": lambda c: f"must be >= {c['ge']}",
    "greater_than": lambda c: f"must be > {c['gt']}",
    "less_than_equal": lambda c: f"must be <= {c['le']}",
    "less_than": lambda c: f"must be < {c['lt']}",
    "int_parsing": lambda c: "must be an integer",
    "int_type": lambda c: "must be an integer",
    "int_from_float": lambda c: "must be an integer",
    "float_parsing": lambda c: "must be a number",
    "float_type": lambda c: "must be a number",
    "bool_parsing": lambda c: "must be true or false",
    "bool_type": lambda c: "must be true or false",
    "string_type": lambda c: "must be a string",
    "list_type": lambda c: "must be a list",
    "dict_type": lambda c: "must be a mapping (key: value)",
    "model_type": lambda c: "must be a mapping (key: value)",
    "model_attributes_type": lambda c: "must be a mapping (key: value)",
}


def format_errors(exc: ValidationError, root: "type[BaseModel]", data: Any = None,
                  lines: "Mapping[str, int] | None" = None) -> list[str]:
    """One line per pydantic error: `path: value is not allowed: why`, `path: unknown key; allowed: ...`."""
    out: list[str] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        etype = err.get("type", "")
        msg = one_line(str(err.get("msg", "")))
        ctx = err.get("ctx") or {}
        value = err.get("input")
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix):]
        m = re.match(r"^__loc__(.*?)__(.*)$", msg, re.S)  # a validator's message that belongs to one key
        unseen = object()
        if m:
            loc = _parse_loc(m.group(1))
            msg = m.group(2)
            value = _lookup(data, loc, unseen)
        path = fmt_loc(loc)
        where = ""
        if lines is not None:
            line = _line_for(lines, loc)
            if line:
                where = f" (line {line})"
        if etype == "extra_forbidden":
            model = model_at(root, loc[:-1])
            allowed = ", ".join(model.model_fields) if model else "(see the schema)"
            out.append(f"{path}: unknown key; allowed: {allowed}{where}")
        elif etype == "missing":
            out.append(f"{path}: required key is missing{where}")
        elif etype == "literal_error":
            out.append(f"{path}: {fmt_value(value)} is not allowed: allowed: {ctx.get('expected')}{where}")
        elif etype in _CONSTRAINT_TEXT:
            out.append(f"{path}: {fmt_value(value)} is not allowed: {_CONSTRAINT_TEXT[etype](ctx)}{where}")
        elif value is unseen or (model_at(root, loc) is not None and etype in ("value_error", "assertion_error")):
            out.append(f"{path}: {msg}{where}")   # the key is not in the file as written (e.g. suite: NAME)
        else:
            if msg.startswith("Input should be "):
                msg = "must be " + msg[len("Input should be "):]
            out.append(f"{path}: {fmt_value(value)} is not allowed: {msg}{where}")
    return out


def _parse_loc(text: str) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", text):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def _lookup(data: Any, loc: tuple[Any, ...], default: Any) -> Any:
    cur = data
    for part in loc:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return default
    return cur


def _line_for(lines: Mapping[str, int], loc: tuple[Any, ...]) -> "int | None":
    for cut in range(len(loc), 0, -1):
        line = lines.get(fmt_loc(loc[:cut]))
        if line:
            return line
    return None
