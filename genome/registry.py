"""Plug-in registries: name -> object, or an import path `package.module:Name`.

A registry is an ordinary object built per campaign (no module-level mutable state): start from
the built-ins, then add plug-ins named in the campaign YAML.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, Generic, Iterable, Iterator, Mapping, TypeVar

T = TypeVar("T")


def load_object(path: str) -> Any:
    """Import `package.module:Name` (or `package.module.Name`) and return the object."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    elif "." in path:
        module_name, _, attr = path.rpartition(".")
    else:
        raise ValueError(f"{path!r} is not an import path; write package.module:Name")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for plug-in {path!r}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ValueError(f"module {module_name!r} has no {attr!r} (plug-in {path!r})") from exc
    return obj


class Registry(Generic[T]):
    """Named factories of one kind of plug-in (operators, providers, families, policies)."""

    def __init__(self, kind: str, entries: "dict[str, Callable[..., T]] | None" = None):
        self.kind = kind
        self._entries: dict[str, Callable[..., T]] = dict(entries or {})

    def register(self, name: str, factory: Callable[..., T]) -> None:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = factory

    def resolve(self, name: str) -> Callable[..., T]:
        if name in self._entries:
            return self._entries[name]
        if ":" in name:
            factory = load_object(name)
            if not callable(factory):
                raise ValueError(f"{self.kind} plug-in {name!r} is not callable")
            return factory
        known = ", ".join(sorted(self._entries)) or "(none)"
        raise ValueError(f"unknown {self.kind} {name!r}; known: {known}; or give an import path package.module:Name")

    def create(self, name: str, *args: Any, **kwargs: Any) -> T:
        return self.resolve(name)(*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))


def check_params(factory: Callable[..., Any], params: Mapping[str, Any], positional: Iterable[str],
                 what: str) -> None:
    """Refuse keyword parameters a plug-in factory does not take, naming the allowed ones.

    `positional` are the arguments the caller passes itself (not the user's to set); a factory
    that takes **kwargs, or whose signature cannot be read, is not checked."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return
    reserved = {"self", *positional}
    allowed = [n for n, p in sig.parameters.items()
               if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n not in reserved]
    for key in params:
        if key not in allowed:
            raise ValueError(f"{what} has no parameter {key!r}; allowed: {', '.join(allowed) or '(none)'}")
