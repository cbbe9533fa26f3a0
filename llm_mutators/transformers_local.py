"""A local Hugging Face transformers model as an LLM provider (registered as `transformers`).

    llm:
      providers:
        - {name: local, kind: transformers, model: smollm2,
           options: {path: /models/SmolLM2-135M-Instruct, device: cuda, dtype: bfloat16, max_new_tokens: 256}}

Options: `path` (a local model directory; required; nothing is ever downloaded: every load is
`local_files_only=True`), `device` (default cuda when torch sees a GPU, else cpu), `dtype`
(float32, float16, bfloat16; default bfloat16 on cuda, float32 on cpu), `max_new_tokens` (a cap
on what a request may ask for), `seed` (mixed into every request's seed; a campaign sets it from
its own seed).

The model and tokenizer are loaded on the first call, once, under a lock; calls are served one
at a time (one model, one device). The prompt is the tokenizer's chat template when it has one,
else the messages joined as `role: content` lines. Generation is seeded from (seed, request, how
many times this request was made before with that seed), inside `torch.random.fork_rng`, so the
global random state is left as it was and the same campaign asks the same questions and gets the
same answers; a `seed=` given to `complete` replaces the provider's. Temperature 0 is greedy
decoding. Usage is counted exactly: the prompt's tokens and the tokens
generated (an end-of-sequence token included).

Every failure is a `ProviderError` with a message that says what to do (no path, no directory,
torch or transformers not installed, a directory that holds no model, no GPU, out of GPU memory,
a prompt longer than the model's context), never an exception that stops a campaign. A failed
load is remembered: later calls fail at once with the same message instead of loading again.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from .chat import ChatResult, Messages, ProviderError, check_messages, messages_key

DTYPES = ("float32", "float16", "bfloat16")


def plain_prompt(messages: list[dict[str, str]]) -> str:
    """The messages as `role: content` lines, ending with an open `assistant:` turn (for a
    tokenizer without a chat template)."""
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\nassistant:"


def request_seed(seed: int, key: str, repeat: int) -> int:
    """A 63-bit generation seed of (provider seed, request key, how many times it was made before)."""
    digest = hashlib.sha256(f"{int(seed)}|{key}|{int(repeat)}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


class TransformersLocal:
    """A causal language model from a local directory. See the module docstring."""

    def __init__(self, name: str, model: str, path: "str | None" = None, device: "str | None" = None,
                 dtype: "str | None" = None, max_new_tokens: int = 512, seed: int = 0,
                 base_url: "str | None" = None, api_key_env: "str | None" = None):
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"provider {name!r}: max_new_tokens must be a whole number >= 1, got {max_new_tokens!r}")
        if dtype is not None and dtype not in DTYPES:
            raise ValueError(f"provider {name!r}: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        if device is not None and not (isinstance(device, str) and (device == "cpu" or device.startswith("cuda"))):
            raise ValueError(f"provider {name!r}: device must be cpu, cuda or cuda:N, got {device!r}")
        if base_url is not None or api_key_env is not None:
            raise ValueError(f"provider {name!r}: a local transformers model takes no base_url or api_key_env")
        self.name, self.model = name, model
        self.path = None if path is None else str(path)
        self.device_option, self.dtype_option = device, dtype
        self.max_new_tokens, self.seed = int(max_new_tokens), int(seed)
        self._lock = threading.Lock()          # one load, one generation at a time
        self._loaded: "tuple[Any, Any, Any, str] | None" = None   # (torch, tokenizer, model, device)
        self._load_error: "ProviderError | None" = None
        self._repeats: dict[tuple[int, str], int] = {}

    # -- loading -------------------------------------------------------------------------------
    def _fail(self, message: str) -> ProviderError:
        return ProviderError("server_error", f"transformers provider {self.name!r}: {message}")

    def _load(self) -> "tuple[Any, Any, Any, str]":
        """(torch, tokenizer, model, device), loaded on the first call; the lock is held."""
        if self._loaded is not None:
            return self._loaded
        if self._load_error is not None:
            raise ProviderError(self._load_error.kind, f"{self._load_error.message} (loading failed earlier)")
        try:
            self._loaded = self._load_now()
        except ProviderError as exc:
            self._load_error = exc
            raise
        return self._loaded

    def _load_now(self) -> "tuple[Any, Any, Any, str]":
        if not self.path:
            raise self._fail("options.path (a local model directory) is required")
        folder = Path(self.path).expanduser()
        if not folder.is_dir():
            raise self._fail(f"no model directory at {folder} (this provider never downloads; save a model there "
                             "with save_pretrained, or point path at one)")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise self._fail(f"needs torch and transformers ({exc}); install them: pip install 'evogemm[llm]'") \
                from None
        device = self.device_option or ("cuda" if torch.cuda.is_available() else "cpu")
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise self._fail(f"device {device} was asked for, but torch sees no CUDA GPU")
        dtype = getattr(torch, self.dtype_option or ("bfloat16" if device.startswith("cuda") else "float32"))
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=dtype)
            model.to(device)
            model.eval()
        except torch.cuda.OutOfMemoryError as exc:
            self._free(torch)
            raise self._fail(f"out of GPU memory loading {folder} on {device} ({str(exc)[:200]})") from None
        except Exception as exc:  # noqa: BLE001 - any broken model directory is one clear error
            raise self._fail(f"cannot load a causal LM from {folder}: {type(exc).__name__}: {str(exc)[:300]}") \
                from None
        return torch, tokenizer, model, device

    @staticmethod
    def _free(torch: Any) -> None:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- answering -----------------------------------------------------------------------------
    def _encode(self, tokenizer: Any, msgs: list[dict[str, str]]) -> tuple[str, Any]:
        if getattr(tokenizer, "chat_template", None):
            text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            return text, tokenizer(text, return_tensors="pt", add_special_tokens=False)
        text = plain_prompt(msgs)
        return text, tokenizer(text, return_tensors="pt")

    def complete(self, messages: Messages, max_tokens: int = 1024, temperature: float = 0.7,
                 seed: "int | None" = None) -> ChatResult:
        msgs = check_messages(messages)
        key = messages_key(self.model, msgs)
        start = time.monotonic()
        base_seed = self.seed if seed is None else int(seed)
        with self._lock:
            repeat = self._repeats.get((base_seed, key), 0)
            self._repeats[(base_seed, key)] = repeat + 1
            torch, tokenizer, model, device = self._load()
            try:
                _, enc = self._encode(tokenizer, msgs)
            except Exception as exc:  # noqa: BLE001 - a template that cannot render these messages
                raise self._fail(f"cannot build the prompt: {type(exc).__name__}: {str(exc)[:200]}") from None
            prompt_len = int(enc["input_ids"].shape[1])
            context = getattr(model.config, "max_position_embeddings", None)
            new = min(int(max_tokens), self.max_new_tokens)
            if context:
                if prompt_len >= int(context):
                    raise ProviderError("http_error", f"transformers provider {self.name!r}: the prompt has "
                                                      f"{prompt_len} tokens, the model's context {context}")
                new = min(new, int(context) - prompt_len)
            if new < 1:
                raise ProviderError("http_error", f"transformers provider {self.name!r}: max_tokens must be >= 1")
            generation = {"max_new_tokens": new, "do_sample": temperature > 0}
            if temperature > 0:
                generation["temperature"] = float(temperature)
            pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
            if pad is not None:
                generation["pad_token_id"] = pad
            generator_seed = request_seed(base_seed, key, repeat)
            devices = list(range(torch.cuda.device_count())) if device.startswith("cuda") else []
            try:
                with torch.random.fork_rng(devices=devices), torch.inference_mode():
                    torch.manual_seed(generator_seed)
                    inputs = {k: v.to(device) for k, v in enc.items()}
                    out = model.generate(**inputs, **generation)
            except torch.cuda.OutOfMemoryError as exc:
                self._free(torch)
                raise self._fail(f"out of GPU memory generating {new} tokens after a {prompt_len}-token prompt "
                                 f"({str(exc)[:160]})") from None
            except Exception as exc:  # noqa: BLE001 - a failed generation costs this call, not the campaign
                raise self._fail(f"generation failed: {type(exc).__name__}: {str(exc)[:300]}") from None
        tokens = out[0, prompt_len:].tolist()
        eos = tokenizer.eos_token_id
        stopped = eos is not None and bool(tokens) and tokens[-1] == eos
        text = tokenizer.decode(tokens, skip_special_tokens=True)
        return ChatResult(text=text, model=self.model, prompt_tokens=prompt_len, completion_tokens=len(tokens),
                          finish_reason="stop" if stopped else "length", attempts=1,
                          seconds=time.monotonic() - start)
