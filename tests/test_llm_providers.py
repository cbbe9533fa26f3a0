"""LLM providers against a scripted OpenAI-compatible server on 127.0.0.1: answers, usage, the key
from the environment, retries with backoff on 429 / 5xx / stalls, no retry on 4xx, garbage
refused, the concurrency bound, recorded replies; and the campaign schema's provider options."""

from __future__ import annotations

import threading

import pytest

from llm_mutators.chat import ChatResult, ProviderError
from llm_mutators.openai_compat import OpenAICompatible
from llm_mutators.providers import provider_registry
from llm_mutators.replay import ReplayProvider, record
from scripted_llm_server import ScriptedServer

MSGS = [{"role": "system", "content": "You tune GEMM kernels."}, {"role": "user", "content": "tile_n?"}]


def provider(server, **kw):
    sleeps = []
    kw.setdefault("max_retries", 3)
    p = OpenAICompatible("t", "scripted-model", base_url=server.base_url, sleep=sleeps.append, **kw)
    return p, sleeps


def test_a_good_answer_with_usage_and_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("EVOGEMM_TEST_KEY", "sk-test-123")
    with ScriptedServer([{"content": '{"tile_n": 128}', "prompt_tokens": 40, "completion_tokens": 7}]) as s:
        p, _ = provider(s, api_key_env="EVOGEMM_TEST_KEY")
        r = p.complete(MSGS, max_tokens=64, temperature=0.2, seed=5)
    assert isinstance(r, ChatResult) and r.text == '{"tile_n": 128}' and r.tokens == 47 and r.attempts == 1
    req = s.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["headers"]["Authorization"] == "Bearer sk-test-123"
    assert req["body"]["model"] == "scripted-model" and req["body"]["messages"] == MSGS
    assert req["body"]["max_tokens"] == 64 and req["body"]["seed"] == 5


def test_a_missing_key_variable_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("EVOGEMM_NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="environment variable EVOGEMM_NO_SUCH_KEY"):
        OpenAICompatible("t", "m", base_url="http://127.0.0.1:9/v1", api_key_env="EVOGEMM_NO_SUCH_KEY")
    with pytest.raises(ValueError, match="base_url is required"):
        OpenAICompatible("t", "m")


def test_429_and_500_are_retried_with_backoff_honouring_retry_after():
    script = [{"status": 429, "retry_after": 2}, {"status": 500}, {"status": 503}, {"content": "ok"}]
    with ScriptedServer(script) as s:
        p, sleeps = provider(s, backoff_s=0.5)
        r = p.complete(MSGS)
    assert r.text == "ok" and r.attempts == 4 and len(s.requests) == 4
    assert sleeps == [2.0, 1.0, 2.0]          # Retry-After, then 0.5 * 2^1, 0.5 * 2^2


def test_retries_give_up_with_the_kind_of_the_last_failure():
    with ScriptedServer([{"status": 502}]) as s:
        p, sleeps = provider(s, max_retries=2, backoff_s=0.1)
        with pytest.raises(ProviderError) as err:
            p.complete(MSGS)
    assert err.value.kind == "server_error" and err.value.attempts == 3 and len(s.requests) == 3
    assert "gave up after 3 attempts" in str(err.value) and len(sleeps) == 2


def test_a_stall_is_a_timeout_and_is_retried():
    with ScriptedServer([{"stall": 1.5, "content": "late"}, {"content": "on time"}]) as s:
        p, _ = provider(s, timeout_s=0.3)
        r = p.complete(MSGS)
    assert r.text == "on time" and r.attempts == 2


@pytest.mark.parametrize("entry,kind", [({"status": 401, "body": "bad key"}, "auth"),
                                        ({"status": 400, "body": "context too long"}, "http_error"),
                                        ({"raw": "this is not json"}, "bad_response"),
                                        ({"raw": '{"choices": []}'}, "bad_response"),
                                        ({"raw": '{"choices": [{"message": {"content": null}}]}'}, "bad_response")])
def test_client_errors_and_garbage_fail_at_once(entry, kind):
    with ScriptedServer([entry, {"content": "never asked"}]) as s:
        p, sleeps = provider(s)
        with pytest.raises(ProviderError) as err:
            p.complete(MSGS)
    assert err.value.kind == kind and len(s.requests) == 1 and sleeps == []


def test_the_concurrency_bound_holds_under_many_threads():
    """Counted at the client: the server's own count lags (it counts a request out until its
    handler returns, after the client already has the answer and may send the next one)."""
    with ScriptedServer([{"stall": 0.15, "content": "x"}]) as s:
        p, _ = provider(s, max_concurrency=2)
        lock, out, peak = threading.Lock(), [0], [0]
        post = p._post

        def counted(*args, **kwargs):
            with lock:
                out[0] += 1
                peak[0] = max(peak[0], out[0])
            try:
                return post(*args, **kwargs)
            finally:
                with lock:
                    out[0] -= 1

        p._post = counted
        results = []
        threads = [threading.Thread(target=lambda: results.append(p.complete(MSGS))) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 8 and 1 <= peak[0] <= 2  # never more than the bound (2 unless the host is slow)


def test_bad_messages_are_refused_before_any_call():
    with ScriptedServer([{"content": "x"}]) as s:
        p, _ = provider(s)
        with pytest.raises(ValueError, match="message 0"):
            p.complete([{"role": "wizard", "content": "hi"}])
    assert s.requests == []


def test_replay_answers_what_was_recorded_and_nothing_else(tmp_path):
    path = tmp_path / "rec.jsonl"
    record(path, "m", MSGS, ChatResult(text="recorded", model="m", prompt_tokens=3, completion_tokens=1))
    rp = ReplayProvider("r", "m", str(path))
    assert rp.complete(MSGS).text == "recorded" and rp.complete(MSGS).tokens == 4
    with pytest.raises(ProviderError) as err:
        rp.complete([{"role": "user", "content": "something else"}])
    assert err.value.kind == "not_recorded"
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        ReplayProvider("r", "m", str(tmp_path / "bad.jsonl"))


def test_registry_and_campaign_schema_know_the_built_in_providers(tmp_path):
    from experiments.schema import parse_campaign
    assert {"openai", "replay"} <= set(provider_registry().names())
    base = {"name": "x", "shapes": ["1024x1024x1024"], "budget": {"evaluations_per_shape": 4}}
    ok = dict(base, llm={"providers": [{"name": "local", "kind": "openai", "model": "smollm2",
                                        "base_url": "http://127.0.0.1:8080/v1",
                                        "options": {"timeout_s": 30, "max_concurrency": 2}}]})
    cfg = parse_campaign(ok, base_dir=tmp_path)
    assert cfg.llm.providers[0].options == {"timeout_s": 30, "max_concurrency": 2}
    bad = dict(base, llm={"providers": [{"name": "local", "kind": "openai", "model": "m",
                                         "base_url": "http://127.0.0.1:8080/v1", "options": {"temprature": 1}}]})
    with pytest.raises(ValueError, match="has no parameter 'temprature'"):
        parse_campaign(bad, base_dir=tmp_path)
