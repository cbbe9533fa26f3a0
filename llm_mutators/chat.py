"""What every LLM provider answers with, and how it fails.

A provider's `complete(messages, ...)` returns a `ChatResult` or raises `ProviderError`, whose
`kind` says what went wrong (so the engine can credit an operator's arm with the failure and go
on): timeout, rate_limited, server_error, auth, http_error, bad_response, not_recorded, budget.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

Messages = Sequence[Mapping[str, str]]

ERROR_KINDS = ("timeout", "rate_limited", "server_error", "auth", "http_error", "bad_response", "not_recorded",
               "budget")


@dataclass(frozen=True)
class ChatResult:
    text: str
    model: str
    prompt_tokens: "int | None" = None      # as the server reported them (None: it did not)
    completion_tokens: "int | None" = None
    finish_reason: "str | None" = None      # "stop", "length" (truncated), ...
    attempts: int = 1                       # HTTP requests it took (retries included)
    seconds: float = 0.0
    response_id: "str | None" = None

    @property
    def tokens(self) -> int:
        return int(self.prompt_tokens or 0) + int(self.completion_tokens or 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProviderError(RuntimeError):
    """A provider call that produced no usable answer. `retryable` errors were retried already."""

    def __init__(self, kind: str, message: str, attempts: int = 1):
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown provider error kind {kind!r}")
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.attempts = attempts


def messages_key(model: str, messages: Messages) -> str:
    """A stable key of a request (model + messages), for recorded responses."""
    blob = json.dumps({"model": model, "messages": [dict(m) for m in messages]}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def check_messages(messages: Messages) -> list[dict[str, str]]:
    """Messages as a list of {role, content} with known roles, or ValueError."""
    out = []
    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role not in ("system", "user", "assistant") or not isinstance(content, str):
            raise ValueError(f"message {i} must be {{role: system|user|assistant, content: str}}, got {dict(m)!r}")
        out.append({"role": role, "content": content})
    if not out:
        raise ValueError("no messages")
    return out
