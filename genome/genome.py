"""What a kernel is: template family + parameters + code patches. Immutable, hashable, JSON."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping


class GenomeIdMismatch(ValueError):
    """A genome whose recorded id is not the id of its content (an edited file); `.genome` is the content."""

    def __init__(self, message: str, genome: "Genome"):
        super().__init__(message)
        self.genome = genome

    def __reduce__(self) -> tuple:  # survive pickling (process pools)
        return (type(self), (str(self), self.genome))


@dataclass(frozen=True)
class Patch:
    """Replace the body of one named `{% block %}` region of the family's template."""

    block: str
    code: str
    note: str = ""  # why (e.g. the LLM's reason); not part of the identity

    def __post_init__(self) -> None:
        if not isinstance(self.block, str) or not self.block.isidentifier():
            raise ValueError(f"patch block must be an identifier, got {self.block!r}")
        if not isinstance(self.code, str):
            raise TypeError("patch code must be a string")

    def to_dict(self) -> dict[str, str]:
        out = {"block": self.block, "code": self.code}
        if self.note:
            out["note"] = self.note
        return out


def _freeze_params(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    frozen = []
    for key in sorted(params):
        value = params[key]
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise TypeError(f"parameter {key!r} must be an int or a string, got {value!r}")
        frozen.append((str(key), value))
    return tuple(frozen)


@dataclass(frozen=True)
class Genome:
    """A kernel genome.

    `id` is a content hash of (family, params, patch blocks and code): two genomes with the same
    id render the same source. The evaluator additionally keys builds by the rendered source,
    flags and compiler, so genomes that differ only in runtime knobs share one build.
    """

    family: str
    params: tuple[tuple[str, Any], ...]
    patches: tuple[Patch, ...] = field(default=())

    @classmethod
    def make(cls, family: str, params: Mapping[str, Any], patches: Iterable[Patch] = ()) -> "Genome":
        return cls(family=family, params=_freeze_params(params),
                   patches=tuple(sorted(patches, key=lambda p: p.block)))

    def __post_init__(self) -> None:
        if not isinstance(self.family, str) or not self.family:
            raise ValueError("genome family must be a non-empty string")
        blocks = [p.block for p in self.patches]
        if len(blocks) != len(set(blocks)):
            raise ValueError(f"genome patches name a block twice: {blocks}")

    # -- access ------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        for name, value in self.params:
            if name == key:
                return value
        raise KeyError(f"genome of family {self.family!r} has no parameter {key!r}")

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def with_params(self, **changes: Any) -> "Genome":
        merged = self.param_dict
        merged.update(changes)
        return Genome.make(self.family, merged, self.patches)

    def with_patch(self, patch: Patch) -> "Genome":
        kept = [p for p in self.patches if p.block != patch.block]
        return Genome(self.family, self.params, tuple(sorted(kept + [patch], key=lambda p: p.block)))

    # -- identity ----------------------------------------------------------------------------
    def canonical(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "params": dict(self.params),
            "patches": [{"block": p.block, "code": p.code} for p in sorted(self.patches, key=lambda p: p.block)],
        }

    @cached_property
    def id(self) -> str:
        blob = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Genome) and self.canonical() == other.canonical()

    def short(self) -> str:
        """One line for tables and logs."""
        body = " ".join(f"{k}={v}" for k, v in self.params)
        extra = f" +{len(self.patches)} patch" if self.patches else ""
        return f"{self.family}[{self.id[:8]}] {body}{extra}"

    # -- (de)serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            "params": dict(self.params),
            "patches": [p.to_dict() for p in self.patches],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Genome":
        if not isinstance(data, Mapping):
            raise ValueError(f"a genome is a JSON object, got {type(data).__name__}")
        unknown = set(data) - {"id", "family", "params", "patches"}
        if unknown:
            raise ValueError(f"unknown genome keys {sorted(unknown)}; allowed: family, params, patches, id")
        if "family" not in data or "params" not in data:
            raise ValueError("a genome needs 'family' and 'params'")
        if not isinstance(data["params"], Mapping):
            raise ValueError("genome 'params' must be an object of name -> int or string")
        patches = []
        for raw in data.get("patches", []) or []:
            if not isinstance(raw, Mapping) or "block" not in raw or "code" not in raw:
                raise ValueError(f"a patch is {{'block': name, 'code': text}}, got {raw!r}")
            patches.append(Patch(block=raw["block"], code=raw["code"], note=raw.get("note", "")))
        genome = cls.make(str(data["family"]), data["params"], patches)
        claimed = data.get("id")
        if claimed is not None and claimed != genome.id:
            raise GenomeIdMismatch(f"genome id {claimed} does not match its content (content id {genome.id}): the "
                                   "file was edited after its id was written; remove the 'id' key to take the "
                                   "content as it is", genome)
        return genome

    @classmethod
    def from_json(cls, text: str) -> "Genome":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"genome is not valid JSON: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> "Genome":
        return cls.from_json(Path(path).read_text())

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_json() + "\n")
        return path
