"""Every plug-in registry of a campaign in one place, read by the schema, the engine, the
evaluators and the CLI alike.

One registry per kind: template family, operator, selection policy, parent selection, search
strategy, evaluator backend, LLM provider. Each starts from the built-ins; a user's own plug-in is
named by import path `package.module:Name` and is checked for its kind when it is resolved, so a
plug-in of the wrong kind is refused by `evogemm validate` with one line, before a campaign
folder exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from evaluator.factory import evaluator_registry
from genome import Registry
from llm_mutators.providers import provider_registry
from templates import FamilyRegistry, family_registry

from .bandit import policy_registry
from .operators import operator_registry
from .parents import parent_selection_registry
from .search import strategy_registry


@dataclass(frozen=True)
class Plugins:
    families: FamilyRegistry
    operators: Registry
    policies: Registry
    parent_selections: Registry
    strategies: Registry
    evaluators: Registry
    providers: Registry

    def kinds(self) -> dict[str, Registry]:
        """Registry by kind name (as `evogemm plugins` lists them)."""
        return {r.kind: r for r in (self.families, self.operators, self.policies, self.parent_selections,
                                    self.strategies, self.evaluators, self.providers)}


def make_plugins(families: Iterable[str] = ()) -> Plugins:
    """Fresh registries of the built-ins; `families` (built-in names or import paths) are added
    to the family registry, so genomes naming a plug-in family render and build."""
    return Plugins(families=family_registry(families), operators=operator_registry(), policies=policy_registry(),
                   parent_selections=parent_selection_registry(), strategies=strategy_registry(),
                   evaluators=evaluator_registry(), providers=provider_registry())
