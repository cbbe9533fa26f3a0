"""An OpenAI-compatible chat-completions provider (OpenAI, vLLM, SGLang, llama.cpp server, Ollama).

POSTs `{base_url}/chat/completions` with the standard library (no SDK). The key is read from the
environment variable the campaign names (never from the YAML). Retries with exponential backoff
(honouring Retry-After) on 429, 5xx and timeouts; 4xx other than 429 fail at once. A semaphore
bounds the calls in flight. Token usage comes from the response's `usage`.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable

from .chat import ChatResult, Messages, ProviderError, check_messages


class OpenAICompatible:
    """Chat completions over HTTP. See the module docstring."""

    def __init__(self, name: str, model: str, base_url: "str | None" = None, api_key_env: "str | None" = None,
                 timeout_s: float = 120.0, max_retries: int = 4, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
                 max_concurrency: int = 4, sleep: "Callable[[float], None] | None" = None):
        if not base_url:
            raise ValueError(f"provider {name!r}: base_url is required (e.g. http://127.0.0.1:8080/v1)")
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or max_concurrency < 1:
            raise ValueError(f"provider {name!r}: timeout_s > 0, max_retries >= 0, backoff_s >= 0, "
                             "max_concurrency >= 1")
        self.name, self.model = name, model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key_env = api_key_env
        if api_key_env and not os.environ.get(api_key_env):
            raise ValueError(f"provider {name!r}: environment variable {api_key_env} (its API key) is not set")
        self.timeout_s, self.max_retries = float(timeout_s), int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self._slots = threading.BoundedSemaphore(int(max_concurrency))
        self._sleep = sleep or time.sleep

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ.get(self.api_key_env, '')}"
        return headers

    def complete(self, messages: Messages, max_tokens: int = 1024, temperature: float = 0.7,
                 seed: "int | None" = None) -> ChatResult:
        body: dict[str, Any] = {"model": self.model, "messages": check_messages(messages),
                                "max_tokens": int(max_tokens), "temperature": float(temperature)}
        if seed is not None:
            body["seed"] = int(seed)
        data = json.dumps(body).encode()
        start = time.monotonic()
        last: "ProviderError | None" = None
        for attempt in range(1, self.max_retries + 2):
            wait = None
            with self._slots:
                try:
                    return self._post(data, attempt, start)
                except ProviderError as exc:
                    if exc.kind not in ("timeout", "rate_limited", "server_error"):
                        raise
                    last, wait = exc, getattr(exc, "retry_after", None)
            if attempt <= self.max_retries:
                delay = min(self.max_backoff_s, self.backoff_s * (2 ** (attempt - 1)))
                self._sleep(min(self.max_backoff_s, wait) if wait is not None else delay)
        assert last is not None
        raise ProviderError(last.kind, f"{last.message} (gave up after {self.max_retries + 1} attempts)",
                            attempts=self.max_retries + 1)

    def _post(self, data: bytes, attempt: int, start: float) -> ChatResult:
        request = urllib.request.Request(self.url, data=data, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            status = exc.code
            detail = exc.read()[:300].decode("utf-8", "replace")
            if status == 429:
                err = ProviderError("rate_limited", f"HTTP 429 from {self.url}: {detail}", attempt)
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                try:
                    err.retry_after = float(retry_after) if retry_after is not None else None
                except ValueError:
                    err.retry_after = None
                raise err from None
            if status >= 500:
                raise ProviderError("server_error", f"HTTP {status} from {self.url}: {detail}", attempt) from None
            kind = "auth" if status in (401, 403) else "http_error"
            raise ProviderError(kind, f"HTTP {status} from {self.url}: {detail}", attempt) from None
        except (socket.timeout, TimeoutError) as exc:
            raise ProviderError("timeout", f"no answer from {self.url} in {self.timeout_s:g} s", attempt) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (socket.timeout, TimeoutError)):
                raise ProviderError("timeout", f"no answer from {self.url} in {self.timeout_s:g} s", attempt) from exc
            raise ProviderError("server_error", f"cannot reach {self.url}: {exc.reason}", attempt) from exc
        return self._parse(raw, attempt, time.monotonic() - start)

    def _parse(self, raw: bytes, attempt: int, seconds: float) -> ChatResult:
        try:
            payload = json.loads(raw)
            choice = payload["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError("bad_response", f"not a chat completion ({type(exc).__name__}: {exc}): "
                                                f"{raw[:200]!r}", attempt) from None
        usage = payload.get("usage") or {}
        return ChatResult(text=text, model=str(payload.get("model") or self.model),
                          prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                          finish_reason=choice.get("finish_reason"), attempts=attempt, seconds=seconds,
                          response_id=payload.get("id"))
