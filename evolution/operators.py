"""The operator registry built per campaign (built-ins + import paths) and the campaign's arms.

An operator entry is one arm of the selection policy: `name` resolves through a `Registry` made
fresh for the campaign from `genome.operators.classic_operators()`; a name of the form
`package.module:Factory` imports a plug-in. The arm is the entry's `arm` label, else `name`, else
`name@model` for LLM operators.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from genome import Operator, Registry, classic_operators, describe_object


@dataclass(frozen=True)
class OperatorEntry:
    arm: str
    operator: Operator
    prior: float
    name: str
    model: "str | None" = None

    @property
    def arity(self) -> int:
        return int(getattr(self.operator, "arity", 1))


def _check_operator(obj: Any) -> "str | None":
    """An operator plug-in is a class whose instances are called with (parents, ctx) and that
    says how many parents it takes (`arity`)."""
    if not inspect.isclass(obj):
        return f"is {describe_object(obj)}, not an operator class (with arity and __call__(parents, ctx))"
    if not any("__call__" in vars(k) for k in obj.__mro__ if k is not object):
        return f"class {obj.__name__} has no __call__(parents, ctx)"
    if not isinstance(getattr(obj, "arity", None), int):
        return f"class {obj.__name__} has no integer `arity` (how many parents it takes)"
    return None


def operator_registry(extra: "Mapping[str, Callable[..., Operator]] | None" = None) -> Registry[Operator]:
    """A fresh registry: the classic operators, plus `extra` (name -> factory)."""
    from llm_mutators.crossover_op import LlmCrossover
    from llm_mutators.fix_op import LlmFix
    from llm_mutators.param_op import LlmParam
    from llm_mutators.patch_op import LlmPatch
    llm = {"llm_param": LlmParam, "llm_patch": LlmPatch, "llm_fix": LlmFix, "llm_crossover": LlmCrossover}
    reg: Registry[Operator] = Registry("operator", {**classic_operators(), **llm}, check=_check_operator)
    for name, factory in (extra or {}).items():
        reg.register(name, factory)
    return reg


def build_operators(specs: Iterable[Any], registry: "Registry[Operator] | None" = None) -> dict[str, OperatorEntry]:
    """Instantiate the campaign's operator specs (experiments.schema.OperatorSpec or dicts with
    name/prior/params/model/arm), keyed by arm, in the order given."""
    reg = registry or operator_registry()
    out: dict[str, OperatorEntry] = {}
    for spec in specs:
        d = spec.model_dump() if hasattr(spec, "model_dump") else dict(spec)
        name, params, model = d["name"], dict(d.get("params") or {}), d.get("model")
        arm = d.get("arm") or (f"{name}@{model}" if model else name)
        factory = reg.resolve(name)
        kwargs = dict(params)
        if model is not None and _accepts(factory, "model"):
            kwargs["model"] = model
        op = factory(**kwargs)
        if arm in out:
            raise ValueError(f"operator arm {arm!r} is given twice; label entries with `arm:`")
        out[arm] = OperatorEntry(arm=arm, operator=op, prior=float(d.get("prior", 1.0)), name=name, model=model)
    return out


def _accepts(factory: Callable[..., Any], kw: str) -> bool:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    return kw in sig.parameters or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
