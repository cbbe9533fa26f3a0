"""Paths a campaign names (suite, warm_start, seed_from) and the shapes it lists or loads.

Relative paths are resolved against the campaign file's folder, then the repository root above it
(the folder with pyproject.toml); a path that starts with ../ is then searched for without it in
every folder above the campaign file (so `../shared/suites/public.yaml` works from any checkout
below a `shared/` folder); last, the current directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Iterable, Mapping

import yaml
from pydantic import BeforeValidator, ValidationInfo

from genome import Problem

from .schema_yaml import yaml_message


def _repo_root(start: Path) -> "Path | None":
    for folder in [start, *start.parents]:
        if (folder / "pyproject.toml").exists():
            return folder
    return None


BUNDLED_SUITES = Path(__file__).resolve().parent / "suites"   # the suites that ship with the package


def bundled_suite(name: str) -> "Path | None":
    """The bundled suite file a bare name means (`public`, `unaligned.yaml`), or None."""
    path = Path(name)
    if path.parent != Path(".") or path.suffix not in ("", ".yaml", ".yml"):
        return None
    candidate = BUNDLED_SUITES / (path.name if path.suffix else f"{path.name}.yaml")
    return candidate if candidate.is_file() else None


def resolve_path(raw: str, base_dir: "Path | None", must_exist: bool = True) -> Path:
    """Find `raw`: absolute; else relative to the campaign's folder, then the repository root above
    it; else the path without its leading ../ searched in every folder above the campaign file;
    last, relative to the current directory."""
    path = Path(os.path.expanduser(raw))
    if path.is_absolute():
        if must_exist and not path.exists():
            raise ValueError(f"{raw} does not exist")
        return path
    tried: list[Path] = []
    bases: list[Path] = []
    if base_dir is not None:
        bases.append(base_dir)
        root = _repo_root(base_dir)
        if root is not None and root != base_dir:
            bases.append(root)
    for base in bases:
        candidate = (base / path).resolve()
        tried.append(candidate)
        if candidate.exists():
            return candidate
    stripped = Path(*[p for p in path.parts if p not in ("..", ".")])
    if stripped != path and base_dir is not None:
        for folder in [base_dir, *base_dir.parents]:
            candidate = folder / stripped
            if candidate.exists():
                return candidate.resolve()
        tried.append(Path(f"<every folder above {base_dir}>") / stripped)
    candidate = (Path.cwd() / path).resolve()
    tried.append(candidate)
    if candidate.exists():
        return candidate
    if must_exist:
        raise ValueError(f"{raw} not found (tried {', '.join(str(t) for t in tried)})")
    return tried[0]


def is_stored(info: ValidationInfo) -> bool:
    """Validating the config a campaign folder recorded (its paths were checked when it was made)."""
    return bool((info.context or {}).get("stored"))


def base_dir_of(info: ValidationInfo) -> "Path | None":
    base = (info.context or {}).get("base_dir")
    return Path(base) if base else None


# -- shapes and suites ----------------------------------------------------------------------------

def parse_shape(value: Any) -> Problem:
    if isinstance(value, bool) or value is None:
        raise ValueError("a shape is 'MxNxK' or [M, N, K]")
    if isinstance(value, (list, tuple)) and not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError("a shape is [M, N, K] with integer M, N, K")
    if not isinstance(value, (str, list, tuple)):
        raise ValueError("a shape is 'MxNxK' or [M, N, K]")
    try:
        return Problem.parse(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(str(exc)) from exc


ShapeItem = Annotated[Any, BeforeValidator(lambda v: parse_shape(v).name)]


def load_suite(path: Path, groups: "Iterable[str] | None" = None) -> list[Problem]:
    """Shapes of a suite file (`shapes:` a list, or a mapping group -> list), in file order."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"suite {path}: {yaml_message(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"suite {path} is not a UTF-8 text file (offset {exc.start})") from exc
    except OSError as exc:
        raise ValueError(f"suite {path} cannot be read: {exc.strerror or exc}") from exc
    if not isinstance(data, Mapping) or "shapes" not in data:
        raise ValueError(f"suite {path} has no 'shapes' key")
    shapes = data["shapes"]
    if isinstance(shapes, Mapping):
        wanted = list(groups) if groups else list(shapes)
        unknown = [g for g in wanted if g not in shapes]
        if unknown:
            raise ValueError(f"suite {path} has no group {', '.join(unknown)}; groups: {', '.join(shapes)}")
        raw = [s for g in wanted for s in (shapes[g] or [])]
    else:
        if groups:
            raise ValueError(f"suite {path} has no groups (its shapes are one list)")
        raw = list(shapes or [])
    out: list[Problem] = []
    for i, item in enumerate(raw):
        try:
            problem = parse_shape(item)
        except ValueError as exc:
            raise ValueError(f"suite {path} shape #{i + 1} {item!r}: {exc}") from exc
        if problem not in out:
            out.append(problem)
    return out
