"""Plug-in registries: name -> object, or an import path `package.module:Name`.

A registry is an ordinary object built per campaign (no module-level mutable state): start from
the built-ins, then add plug-ins named in the campaign YAML. Each registry holds one kind of
plug-in and knows what that kind must look like (`check`), so a plug-in of the wrong kind
(a function where a strategy class is wanted, a number where an evaluator is wanted) is refused
when it is resolved, with one line that names it, and never reaches the engine.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, Generic, Iterable, Iterator, Mapping, TypeVar

T = TypeVar("T")


class PluginError(ValueError):
    """A plug-in name that does not import, or imports something of the wrong kind."""


def is_import_path(name: str) -> bool:
    return isinstance(name, str) and ":" in name


def load_object(path: str) -> Any:
    """Import `package.module:Name` (or `package.module.Name`) and return the object."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    elif "." in path:
        module_name, _, attr = path.rpartition(".")
    else:
        raise PluginError(f"{path!r} is not an import path; write package.module:Name")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f"cannot import module {module_name!r} for plug-in {path!r}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - the plug-in's own code failed while importing (a bug there, a syntax error)
        raise PluginError(f"importing module {module_name!r} for plug-in {path!r} failed: "
                          f"{type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise PluginError(f"module {module_name!r} has no {attr!r} (plug-in {path!r})") from exc
    return obj


def describe_object(obj: Any) -> str:
    """'a function', 'a float', 'a class Foo' ... for error messages."""
    if inspect.isclass(obj):
        return f"a class {obj.__name__}"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "a function"
    if inspect.ismodule(obj):
        return "a module"
    return f"a {type(obj).__name__}"


def class_with(*methods: str) -> Callable[[Any], "str | None"]:
    """A kind check: the plug-in must be a class that has every one of `methods`."""

    def check(obj: Any) -> "str | None":
        if not inspect.isclass(obj):
            return f"is {describe_object(obj)}, not a class with {', '.join(m + '()' for m in methods)}"
        missing = [m for m in methods if not callable(getattr(obj, m, None))]
        if missing:
            return f"class {obj.__name__} has no {', '.join(m + '()' for m in missing)}"
        return None

    return check


class Registry(Generic[T]):
    """Named entries of one kind of plug-in (operators, providers, families, policies...).

    An entry is a factory (usually a class); `create(name, ...)` calls it. Built-in entries are
    trusted; an import path is loaded and checked with `check(obj) -> None | why-not`.
    """

    def __init__(self, kind: str, entries: "Mapping[str, Any] | None" = None,
                 check: "Callable[[Any], str | None] | None" = None):
        self.kind = kind
        self._entries: dict[str, Any] = dict(entries or {})
        self._check = check

    def register(self, name: str, entry: Any) -> None:
        if name in self._entries:
            raise PluginError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry

    def check(self, obj: Any, name: str) -> Any:
        """Return `obj` if it is of this registry's kind, else raise PluginError naming it."""
        why = self._check(obj) if self._check else (None if callable(obj) else f"is {describe_object(obj)}")
        if why:
            raise PluginError(f"{self.kind} plug-in {name!r} {why}")
        return obj

    def resolve(self, name: str) -> Any:
        if not isinstance(name, str):
            raise PluginError(f"a {self.kind} is named by a string, got {name!r}")
        if name in self._entries:
            return self._entries[name]
        if is_import_path(name):
            return self.check(load_object(name), name)
        raise PluginError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names()) or '(none)'}; "
                          "or give an import path package.module:Name")

    def create(self, name: str, *args: Any, **kwargs: Any) -> T:
        return self.resolve(name)(*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def items(self) -> list[tuple[str, Any]]:
        return sorted(self._entries.items())

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
