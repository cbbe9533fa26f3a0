"""The campaign's door to its LLM providers.

Every call is recorded in the campaign database before its answer is used. An unscoped call is
keyed by (model, messages, how many times this exact request was made before in this campaign). A resumed
campaign re-runs its search from the seed, so it makes the same requests in the same order: each
is answered from the record, and no paid call is repeated, also for models whose answers are not
deterministic. Failed calls are recorded too (and replayed as the same failure).

Operators run on the engine's operator threads, several at once: the gateway keeps one
connection to the campaign database per thread (SQLite in WAL mode takes them side by side). Calls
made side by side could meet the same request in an order that depends on thread timing, so the
engine gives each operator call its own `scoped(scope)` view (scope: the call's seed, drawn from
the campaign's random generator): a scoped request is keyed by its place, (model, scope, how many
requests to that model the scope made before), not by its text, so a resumed campaign finds every
answer under the same key whatever order its threads run in, also when the prompts changed since
(new code, a new template): the recorded answer is served, the change is noted once in the log and
counted (`prompt_changes`), and nothing is paid again. Calls recorded before this keying (by
request text and scope) are still found.

Tokens: before a call, the request's worst case (its prompt at ~1 token per 3 characters, plus
`max_tokens`) is reserved against the campaign's `llm_tokens` budget, together with what the calls
still in flight reserved; a call that could overshoot it is not made (ProviderError "budget",
recorded like a failed call, so a resume replays the refusal). Used tokens are what the servers
reported.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from llm_mutators.chat import ChatResult, ProviderError, check_messages, messages_key

from .db import CampaignDB


@dataclass
class GatewayResult:
    """A call's answer, its tokens and the key of its record."""

    text: str
    tokens: int
    key: str


class LlmGateway:
    def __init__(self, providers: Mapping[str, Any], db_path: Any, token_budget: "int | None" = None):
        self.providers = dict(providers)          # provider name and model name -> provider
        self.db_path = db_path
        self._local = threading.local()
        self._opened: list[CampaignDB] = []
        self.token_budget = token_budget
        self._seen: dict[str, int] = {}
        self._reserved = 0                        # tokens reserved by the calls in flight
        self._lock = threading.Lock()
        self.prompt_changes = 0                   # recorded answers served to a request whose text changed
        self.on_note: "Callable[[str], None] | None" = None

    @property
    def db(self) -> CampaignDB:
        """This thread's connection to the campaign database."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = CampaignDB(self.db_path)
            with self._lock:
                self._opened.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for db in opened:
            try:
                db.close()
            except Exception:  # noqa: BLE001 - a connection of a finished thread
                pass

    def provider(self, model: str) -> Any:
        if model not in self.providers:
            raise ProviderError("http_error", f"no LLM provider named {model!r}; known: "
                                              f"{', '.join(sorted(self.providers)) or '(none)'}")
        return self.providers[model]

    def _next_key(self, counter: str) -> str:
        with self._lock:
            n = self._seen.get(counter, 0)
            self._seen[counter] = n + 1
        return f"{counter}:{n}"

    def _prompt_changed(self, model: str) -> None:
        with self._lock:
            self.prompt_changes += 1
            first = self.prompt_changes == 1
        if first and self.on_note is not None:
            self.on_note(f"LLM requests differ from the ones recorded (model {model}; the prompts or the code that "
                         "writes them changed since): each is answered from its record, as recorded, and no call "
                         "is made again; `prompt_changes` counts them")

    def scoped(self, scope: str) -> "ScopedGateway":
        """A view of the gateway for one operator call: its requests are counted within `scope`,
        and the keys of its calls are kept (`keys`)."""
        return ScopedGateway(self, scope)

    def __call__(self, model: str, messages: Sequence[Mapping[str, str]], max_tokens: int = 1024,
                 temperature: float = 0.7, scope: "str | None" = None,
                 keys: "list[str] | None" = None) -> GatewayResult:
        msgs = check_messages(messages)
        base = messages_key(model, msgs)
        if scope is None:
            key = self._next_key(base)
            stored = self.db.llm_call(key)
        else:  # the scope's n-th request to this model, whatever its text (see the module docstring)
            key, legacy = self._next_key(f"{model}|{scope}"), self._next_key(f"{base}:{scope}")
            stored = self.db.llm_call(key)
            if stored is None:
                stored = self.db.llm_call(legacy)  # recorded before requests were keyed by their place
                key = legacy if stored is not None else key
            if stored is not None and messages_key(stored["model"], json.loads(stored["messages"])) != base:
                self._prompt_changed(model)
        if keys is not None:
            keys.append(key)
        if stored is not None:
            if stored["status"] != "ok":
                raise ProviderError(stored["status"], f"{stored['error']} (recorded)")
            return GatewayResult(stored["text"], int(stored["tokens"]), key)
        provider = self.provider(model)
        reserve = 0
        if self.token_budget is not None:
            reserve = sum(len(m["content"]) for m in msgs) // 3 + int(max_tokens)
            with self._lock:
                used = self.db.llm_tokens_used() + self._reserved
                if used + reserve <= self.token_budget:
                    self._reserved += reserve
            if used + reserve > self.token_budget:
                message = (f"the LLM token budget ({self.token_budget}) has {self.token_budget - used} left "
                           f"(calls in flight counted); this call may take {reserve}: not made")
                self.db.record_llm_call(key, model, msgs, status="budget", error=message, tokens=0)
                raise ProviderError("budget", message)
        try:
            try:
                result: ChatResult = provider.complete(msgs, max_tokens=max_tokens, temperature=temperature)
            except ProviderError as exc:
                self.db.record_llm_call(key, model, msgs, status=exc.kind, error=exc.message, tokens=0)
                raise
            self.db.record_llm_call(key, model, msgs, status="ok", text=result.text, tokens=result.tokens,
                                    response=result.to_dict())
        finally:  # released once the used tokens are in the database
            if reserve:
                with self._lock:
                    self._reserved -= reserve
        return GatewayResult(result.text, result.tokens, key)


class ScopedGateway:
    """The gateway as one operator call sees it (LlmGateway.scoped)."""

    def __init__(self, gateway: LlmGateway, scope: str):
        self.gateway, self.scope = gateway, scope
        self.keys: list[str] = []
        self.tokens = 0  # what the call's requests used (retries included), whatever came of them

    def __call__(self, model: str, messages: Sequence[Mapping[str, str]], max_tokens: int = 1024,
                 temperature: float = 0.7) -> GatewayResult:
        result = self.gateway(model, messages, max_tokens=max_tokens, temperature=temperature, scope=self.scope,
                              keys=self.keys)
        self.tokens += int(result.tokens)
        return result


def make_gateway(config: Any, db: CampaignDB, registry: Any) -> "LlmGateway | None":
    """The campaign's gateway, or None when it names no LLM providers. Providers are found by their
    name and by their model."""
    specs = list(getattr(getattr(config, "llm", None), "providers", []) or [])
    if not specs:
        return None
    providers: dict[str, Any] = {}
    for spec in specs:
        factory = registry.resolve(spec.kind)
        made = factory(name=spec.name, model=spec.model, base_url=spec.base_url, api_key_env=spec.api_key_env,
                       **dict(spec.options))
        providers[spec.name] = made
        providers.setdefault(spec.model, made)
    return LlmGateway(providers, db.path, token_budget=config.budget.llm_tokens)
