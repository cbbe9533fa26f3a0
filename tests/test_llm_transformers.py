"""The `transformers` provider with a tiny random model built in the test (a character-level
tokenizer with a chat template, a 2-layer Llama of hidden size 32): exact token counts, seeded
and greedy generation, the plain prompt without a chat template, every failure a ProviderError,
and a simulator campaign whose llm_param arm asks it (its garbage answers are refused and
credited to the arm, the campaign completes). Skips where torch or transformers is absent; runs
on the GPU when torch sees one (the provider's default device)."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from experiments.campaign import create_campaign, run_campaign  # noqa: E402
from experiments.schema import parse_campaign  # noqa: E402
from llm_mutators.chat import ProviderError  # noqa: E402
from llm_mutators.providers import provider_registry  # noqa: E402
from llm_mutators.transformers_local import TransformersLocal, plain_prompt  # noqa: E402

MSGS = [{"role": "system", "content": "Answer in JSON only."}, {"role": "user", "content": "tile_n? {\"a\": 1}"}]
CHAT_TEMPLATE = ("{% for m in messages %}<s>{{ m.role }}\n{{ m.content }}</s>\n{% endfor %}"
                 "{% if add_generation_prompt %}<s>assistant\n{% endif %}")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _tokenizer(chat_template: bool):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    for c in [chr(i) for i in range(32, 127)] + ["\n"]:
        vocab.setdefault(c, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")     # one token per character
    tok.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")
    if chat_template:
        fast.chat_template = CHAT_TEMPLATE
    return fast


def _save_tiny_model(folder, chat_template: bool = True, context: int = 8192):
    from transformers import LlamaConfig, LlamaForCausalLM
    tokenizer = _tokenizer(chat_template)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=context,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _save_tiny_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny_plain(tmp_path_factory):
    return _save_tiny_model(tmp_path_factory.mktemp("tiny-llama-plain"), chat_template=False)


def _reference(folder, text: str, new: int, add_special_tokens: bool):
    """Greedy decoding of the same prompt with transformers directly."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32).to(DEVICE)
    enc = tok(text, return_tensors="pt", add_special_tokens=add_special_tokens).to(DEVICE)
    out = model.generate(**enc, max_new_tokens=new, do_sample=False, pad_token_id=0)
    n = enc["input_ids"].shape[1]
    return n, out[0, n:].tolist(), tok.decode(out[0, n:], skip_special_tokens=True)


def test_the_provider_is_registered_and_takes_its_options_from_the_campaign(tiny, tmp_path):
    assert provider_registry().resolve("transformers") is TransformersLocal
    entry = {"name": "local", "kind": "transformers", "model": "tiny", "options": {"path": str(tiny)}}
    data = {"name": "t", "shapes": ["1024x1024x1024"], "budget": {"evaluations_per_shape": 8},
            "evaluator": {"backend": "simulator"},
            "operators": [{"name": "llm_param", "model": "local"}], "llm": {"providers": [entry]}}
    parse_campaign(data, base_dir=tmp_path)
    entry["options"] = {"path": str(tiny), "max_new_token": 8}
    with pytest.raises(ValueError, match="no parameter 'max_new_token'"):
        parse_campaign(data, base_dir=tmp_path)
    for bad, match in [({"max_new_tokens": 0}, "max_new_tokens"), ({"dtype": "int8"}, "dtype"),
                       ({"device": "tpu"}, "device"), ({"base_url": "http://x"}, "no base_url")]:
        with pytest.raises(ValueError, match=match):
            TransformersLocal("local", "tiny", path=str(tiny), **bad)


def test_greedy_answers_match_transformers_and_tokens_are_counted_exactly(tiny):
    p = TransformersLocal("local", "tiny", path=str(tiny), dtype="float32", max_new_tokens=12)
    r = p.complete(MSGS, max_tokens=400, temperature=0)        # capped at max_new_tokens
    text = _tokenizer(True).apply_chat_template(MSGS, tokenize=False, add_generation_prompt=True)
    n_prompt, new_ids, ref_text = _reference(tiny, text, 12, add_special_tokens=False)
    # one token per character, <s> and </s> one token each
    assert r.prompt_tokens == n_prompt == len(text) - 2 * text.count("<s>") - 3 * text.count("</s>")
    assert r.completion_tokens == len(new_ids) and 1 <= r.completion_tokens <= 12
    assert r.text == ref_text and r.tokens == n_prompt + len(new_ids) and r.model == "tiny"
    assert r.finish_reason == ("stop" if new_ids[-1] == 2 else "length")
    assert p.complete(MSGS, max_tokens=5, temperature=0).completion_tokens <= 5   # the request's own limit


def test_sampling_is_seeded_by_the_request_and_leaves_the_global_rng_alone(tiny):
    a = TransformersLocal("a", "tiny", path=str(tiny), max_new_tokens=16, seed=3)
    b = TransformersLocal("b", "tiny", path=str(tiny), max_new_tokens=16, seed=3)
    c = TransformersLocal("c", "tiny", path=str(tiny), max_new_tokens=16, seed=4)
    state = torch.random.get_rng_state()
    first = [a.complete(MSGS, temperature=1.0).text for _ in range(2)]
    assert torch.equal(state, torch.random.get_rng_state())
    assert first == [b.complete(MSGS, temperature=1.0).text for _ in range(2)]   # same seed, same answers
    assert first[0] != first[1]                        # a repeated request is a fresh sample
    assert c.complete(MSGS, temperature=1.0).text != first[0]


def test_without_a_chat_template_the_messages_are_joined(tiny_plain):
    p = TransformersLocal("local", "tiny", path=str(tiny_plain), dtype="float32", max_new_tokens=6)
    r = p.complete(MSGS, temperature=0)
    n_prompt, new_ids, ref_text = _reference(tiny_plain, plain_prompt(MSGS), 6, add_special_tokens=True)
    assert plain_prompt(MSGS).endswith("\nassistant:") and "user: tile_n?" in plain_prompt(MSGS)
    assert (r.prompt_tokens, r.completion_tokens, r.text) == (n_prompt, len(new_ids), ref_text)


def test_every_failure_is_a_provider_error_with_a_clear_message(tiny, tmp_path, monkeypatch):
    def fails(provider, match, kind="server_error"):
        with pytest.raises(ProviderError, match=match) as err:
            provider.complete(MSGS, max_tokens=4)
        assert err.value.kind == kind
    fails(TransformersLocal("x", "m"), "options.path .* is required")
    missing = TransformersLocal("x", "m", path=str(tmp_path / "nowhere"))
    fails(missing, "no model directory at .*nowhere.*never downloads")
    fails(missing, "loading failed earlier")                         # not tried again
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "config.json").write_text("{not json")
    fails(TransformersLocal("x", "m", path=str(junk)), "cannot load a causal LM from .*junk")
    if not torch.cuda.is_available():
        fails(TransformersLocal("x", "m", path=str(tiny), device="cuda"), "torch sees no CUDA GPU")
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "transformers", None)                 # as if it were not installed
        fails(TransformersLocal("x", "m", path=str(tiny)), "needs torch and transformers.*pip install")
    long = [{"role": "user", "content": "x" * 9000}]
    with pytest.raises(ProviderError, match="the prompt has .* tokens, the model's context 8192") as err:
        TransformersLocal("x", "m", path=str(tiny)).complete(long, max_tokens=4)
    assert err.value.kind == "http_error"
    oom = TransformersLocal("x", "m", path=str(tiny), max_new_tokens=4)
    oom.complete(MSGS, temperature=0)                                # loaded and working

    def out_of_memory(*a, **k):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
    monkeypatch.setattr(oom._loaded[2], "generate", out_of_memory)
    fails(oom, "out of GPU memory generating 4 tokens")


class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        pass


def test_a_simulator_campaign_asks_the_model_and_survives_its_garbage(tiny, tmp_path):
    data = {"name": "t", "seed": 5, "shapes": ["1024x1024x1024"], "budget": {"evaluations_per_shape": 24},
            "population": {"size": 6, "islands": 1, "offspring": 4, "elite": 1},
            "evaluator": {"backend": "simulator"},
            "operators": [{"name": "param_mutate"}, {"name": "llm_param", "model": "local", "prior": 3.0}],
            "llm": {"providers": [{"name": "local", "kind": "transformers", "model": "tiny-llama",
                                   "options": {"path": str(tiny), "max_new_tokens": 24}}]}}
    folder = tmp_path / "c"
    create_campaign(parse_campaign(data, base_dir=tmp_path), folder)
    result = run_campaign(folder, progress=Silent(), plots=False)
    state = result.states["1024x1024x1024"]
    assert state.evaluations == 24 and state.done_reason == "evaluation budget spent"
    conn = sqlite3.connect(str(folder / "campaign.db"))
    calls = conn.execute("SELECT status, tokens, response, model FROM llm_calls").fetchall()
    adopted = conn.execute("SELECT COUNT(*) FROM proposals WHERE operator='llm_param'").fetchone()[0]
    conn.close()
    assert calls and all(status == "ok" and model == "local" for status, _, _, model in calls)
    for _, tokens, response, _ in calls:               # usage: the prompt's tokens + those generated
        r = json.loads(response)
        assert r["prompt_tokens"] > 1000 and 1 <= r["completion_tokens"] <= 24
        assert tokens == r["prompt_tokens"] + r["completion_tokens"]
    assert adopted == 0                                # a random model's answers are never a valid move
    failures = state.strategy.operator_failures
    assert len(failures) == len(calls) and {f["arm"] for f in failures} == {"llm_param@local"}
    assert {f["error"] for f in failures} == {"OperatorError"}
    assert [r for arm, r in state.strategy.rewards if arm == "llm_param@local"] == [-1.0] * len(calls)
