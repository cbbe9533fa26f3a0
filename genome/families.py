"""The template families evogemm knows, by name, and their search spaces."""

from __future__ import annotations

from .registry import Registry
from .space import SearchSpace
from . import sm90_cutlass_space


def family_registry() -> Registry[SearchSpace]:
    """A fresh registry of the built-in families (add plug-in families to it by name)."""
    return Registry("template family", {sm90_cutlass_space.FAMILY: sm90_cutlass_space.make_space})


def get_space(family: str) -> SearchSpace:
    return family_registry().create(family)
