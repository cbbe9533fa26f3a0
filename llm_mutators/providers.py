"""LLM providers by kind: the registry that a campaign's `llm.providers[].kind` names.

A provider is a class constructed with the provider entry's settings (name, model, base_url,
api_key_env, and its `options`) that answers chat requests with `complete(messages, ...)`,
returning a `ChatResult` or raising `ProviderError` (llm_mutators/chat.py). Built in: `openai`
(any OpenAI-compatible chat-completions server), `replay` (recorded responses) and `transformers`
(a local model directory, loaded on first use; torch and transformers are imported only then); a user's own
provider is named by import path `package.module:Class`.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from genome import Registry, class_with


class Provider(Protocol):
    name: str
    model: str

    def complete(self, messages: Sequence[Mapping[str, str]], **options: Any) -> Any: ...


def provider_registry() -> Registry:
    """A fresh registry of LLM provider kinds: the built-ins, plus plug-ins by import path."""
    from .openai_compat import OpenAICompatible
    from .replay import ReplayProvider
    from .transformers_local import TransformersLocal
    return Registry("LLM provider", {"openai": OpenAICompatible, "replay": ReplayProvider,
                                     "transformers": TransformersLocal},
                    check=class_with("complete"))
