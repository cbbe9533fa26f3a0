"""What the schema asks of the plug-in registries, and the correctness-gate floor.

Every plug-in name in a campaign (template family, operator, selection policy, parent selection,
search strategy, evaluator backend, LLM provider kind) is checked against the registries of
`evolution.plugins.make_plugins()`, the same ones the engine builds from: the schema keeps no
list of names of its own. One `Plugins` is made per validation and travels in the pydantic
validation context (`plugins_of(info)`). Whatever goes wrong when a plug-in is resolved or built
(it does not import, it is of the wrong kind, its constructor refuses the params, its module
raises on import) becomes a ValueError with a one-line message, which the error formatter
reports under the YAML key that named it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from pydantic import ValidationInfo

from .schema_yaml import one_line

if TYPE_CHECKING:  # pragma: no cover
    from evolution.plugins import Plugins
    from genome import Registry


def new_plugins() -> "Plugins":
    from evolution.plugins import make_plugins
    return make_plugins()


def plugins_of(info: ValidationInfo) -> "Plugins":
    """The validation's registries (made once per validation and kept in its context)."""
    ctx = info.context
    if isinstance(ctx, dict):
        plugins = ctx.get("plugins")
        if plugins is None:
            plugins = ctx["plugins"] = new_plugins()
        return plugins
    return new_plugins()


def resolve(registry: "Registry", name: str) -> Any:
    """`registry.resolve(name)`, every failure as a one-line ValueError."""
    try:
        return registry.resolve(name)
    except ValueError as exc:  # genome.PluginError included
        raise ValueError(one_line(str(exc))) from None
    except Exception as exc:  # a plug-in module that fails on import in some other way
        raise ValueError(one_line(f"{registry.kind} plug-in {name!r} failed to load: "
                                  f"{type(exc).__name__}: {exc}")) from None


def guarded(what: str, call: Callable[[], Any]) -> Any:
    """Run a check or a constructor of a plug-in; any failure as a one-line ValueError."""
    try:
        return call()
    except (TypeError, ValueError) as exc:
        raise ValueError(one_line(str(exc))) from None
    except Exception as exc:
        raise ValueError(one_line(f"{what} failed: {type(exc).__name__}: {exc}")) from None


# -- the correctness gate -------------------------------------------------------------------------

def check_timing(timing: Any) -> "tuple[str, str] | None":
    """Check evaluator timing options: unknown keys and bad values raise ValueError (the worker's
    own check); a setting that loosens the gate is returned as (key, why)."""
    if not isinstance(timing, Mapping):
        raise ValueError("must be a mapping (key: value) of timing options")
    from evaluator import timing_options
    loosened = timing_options.gate_violation(dict(timing))
    if loosened:
        return loosened
    timing_options.check_timing(dict(timing))  # low timing values only warn in reports
    return None
