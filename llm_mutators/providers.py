"""LLM providers by kind: the registry that a campaign's `llm.providers[].kind` names.

A provider is a class constructed with the provider entry's settings (name, model, base_url,
api_key_env) that answers chat requests with `complete(messages, **options)`. The built-in
providers (OpenAI-compatible HTTP, local transformers model, replay) register here as they are
written; a user's own provider is named by import path `package.module:Class`.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from genome import Registry, class_with


class Provider(Protocol):
    name: str
    model: str

    def complete(self, messages: Sequence[Mapping[str, str]], **options: Any) -> Any: ...


def provider_registry() -> Registry:
    """A fresh registry of LLM provider kinds (none built in yet; plug-ins by import path)."""
    return Registry("LLM provider", {}, check=class_with("complete"))
