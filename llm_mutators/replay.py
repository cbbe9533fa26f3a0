"""A provider that answers from recorded responses (a JSON-lines file of {key, text, tokens ...}),
keyed by the request (model + messages): for tests, for re-running a campaign without paying for
its calls again, and for what a model said to be looked at later."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from .chat import ChatResult, Messages, ProviderError, check_messages, messages_key


class ReplayProvider:
    def __init__(self, name: str, model: str, path: str, base_url: "str | None" = None,
                 api_key_env: "str | None" = None):
        self.name, self.model, self.path = name, model, Path(path)
        if not self.path.is_file():
            raise ValueError(f"provider {name!r}: no recorded responses at {self.path}")
        self._answers: dict[str, dict] = {}
        for i, line in enumerate(self.path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self._answers[str(entry["key"])] = entry
            except (ValueError, KeyError) as exc:
                raise ValueError(f"{self.path}:{i}: not a recorded response ({exc})") from None

    def complete(self, messages: Messages, max_tokens: int = 1024, temperature: float = 0.7,
                 seed: "int | None" = None) -> ChatResult:
        key = messages_key(self.model, check_messages(messages))
        entry = self._answers.get(key)
        if entry is None:
            raise ProviderError("not_recorded", f"no recorded response for this request in {self.path}")
        return ChatResult(text=entry["text"], model=self.model, prompt_tokens=entry.get("prompt_tokens"),
                          completion_tokens=entry.get("completion_tokens"), finish_reason=entry.get("finish_reason"))


_WRITE_LOCK = threading.Lock()


def record(path: "str | Path", model: str, messages: Messages, result: ChatResult) -> None:
    """Append one response to a recording that ReplayProvider reads."""
    entry = {"key": messages_key(model, check_messages(messages)), **result.to_dict()}
    with _WRITE_LOCK, open(path, "a") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")
