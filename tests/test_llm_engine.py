"""The engine hosting LLM operators: operator calls of a round run side by side (and the search does
not depend on which answer comes first), every child of a call is kept, operator failures are
credited to their arm and stored, fix operators get failed genomes with their compiler log, and a
kill -9 in the middle of a campaign with a scripted server is resumed without repeating a call."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engine_helpers import REPO, cli_env, db_count, fingerprint, small_config
from evaluator.api import STATUS_COMPILE_FAILED, STATUS_OK, Measurement, Timing
from evaluator.build_log import log_excerpt
from evaluator.compile import BuildResult
from evaluator.pipeline import build_failure
from evaluator.simulator import SimulatedEvaluator
from evolution.bandit import make_policy
from evolution.db import CampaignDB
from evolution.evolve import EvolutionStrategy
from evolution.llm_gateway import LlmGateway
from evolution.operators import OperatorEntry, build_operators
from experiments.campaign import create_campaign, run_campaign
from experiments.schema import parse_campaign
from genome import Offspring, Problem
from llm_mutators.chat import messages_key
from llm_mutators.openai_compat import OpenAICompatible
from llm_mutators.replay import ReplayProvider
from scripted_llm_server import ScriptedServer
from templates import get_space

SHAPE = "1024x1024x1024"
PROBLEM = Problem.parse(SHAPE)
SPACE = get_space("sm90_cutlass")
TESTS = Path(__file__).resolve().parent
MOVES = [{"swizzle": 2}, {"raster": "along_n"}, {"tile_k": 128}, {"swizzle": 4, "raster": "along_m"},
         {"tile_n": 256}, {"swizzle": 8}, {"stages": 4}, {"tile_k": 64, "swizzle": 1}]


class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        pass


def _content(messages) -> str:
    return json.dumps(messages, sort_keys=True)


def _move_for(body: dict) -> dict:
    """A good answer that depends only on the request's content (so a run does not depend on the
    order in which side-by-side requests reach the server)."""
    digest = hashlib.sha256(_content(body["messages"]).encode()).digest()
    return {"content": json.dumps({"params": MOVES[digest[0] % len(MOVES)], "reason": "scripted"})}


# -- operators and providers used by the tests -------------------------------------------------------

class Echo:
    """An LLM operator: asks the model about its parent, then mutates it (the answer need only arrive)."""

    arity = 1

    def __init__(self, model: str = "scripted", name: str = "echo"):
        self.model, self.name = model, name

    def __call__(self, parents, ctx):
        result = ctx.llm(self.model, [{"role": "user", "content": f"improve {parents[0].id}"}], max_tokens=16)
        child = ctx.space.mutate(parents[0], ctx.rng)
        return [Offspring(child, self.name, (parents[0].id,), meta={"llm_call": result.key})]


class SameQuestion:
    """An LLM operator whose every call sends the same request, after an unseeded pause (so calls
    reach the gateway in a different order in every run); its child depends on the answer."""

    arity = 1

    def __init__(self, model: str = "scripted", name: str = "same"):
        self.model, self.name = model, name

    def __call__(self, parents, ctx):
        time.sleep(random.SystemRandom().uniform(0.0, 0.05))
        result = ctx.llm(self.model, [{"role": "user", "content": "one more idea?"}], max_tokens=16)
        child = ctx.space.mutate(parents[0], random.Random(int(result.text)), n_changes=3)
        return [Offspring(child, self.name, (parents[0].id,), meta={"llm_call": result.key})]


class Triple:
    """Three children per call."""

    arity = 1

    def __init__(self, name: str = "triple"):
        self.name = name
        self.calls: list[list[str]] = []

    def __call__(self, parents, ctx):
        kids = [ctx.space.mutate(parents[0], ctx.rng, n_changes=3) for _ in range(3)]
        self.calls.append([k.id for k in kids])
        return [Offspring(k, self.name, (parents[0].id,)) for k in kids]


class Fixer:
    """A fix operator: takes failed genomes as parents, and keeps what it was shown."""

    arity = 1
    wants_failed_parents = True

    def __init__(self, name: str = "fixer"):
        self.name = name
        self.seen: list[tuple[list[str], dict]] = []

    def __call__(self, parents, ctx):
        self.seen.append(([p.id for p in parents], dict(ctx.history["failure_of"])))
        return [Offspring(ctx.space.mutate(parents[0], ctx.rng), self.name, (parents[0].id,), note="fixed")]


class JitteryReplay(ReplayProvider):
    """The replay provider, answering after a pause drawn from an unseeded generator on purpose: the
    order in which side-by-side calls finish differs from run to run."""

    def complete(self, messages, **options):
        time.sleep(random.SystemRandom().uniform(0.0, 0.02))
        return super().complete(messages, **options)


class FirstArm:
    """A policy that always picks its first arm and records its updates."""

    def __init__(self, arms):
        self.arms, self.updates = list(arms), []

    def choose(self, rng):
        return self.arms[0]

    def update(self, arm, reward):
        self.updates.append((arm, reward))


# -- helpers -------------------------------------------------------------------------------------------

def _strategy(operators: dict, policy, **kw) -> EvolutionStrategy:
    return EvolutionStrategy(PROBLEM, [SPACE], operators, policy, random.Random(3), size=8, islands=1, offspring=4,
                             elite=1, seed_fraction=0.0, best_vendor_us=10.0, **kw)


def _populate(strat: EvolutionStrategy) -> None:
    """Ask and tell the first population (simulated times)."""
    first = strat.ask(strat.initial_size)
    for off, m in zip(first, SimulatedEvaluator().evaluate([o.genome for o in first], PROBLEM)):
        strat.tell(off, m)


def _run(folder: Path, data: dict, mode: str = "run", evaluator=None):
    if not (folder / "campaign.db").exists():
        create_campaign(parse_campaign(data, base_dir=folder.parent), folder)
    extra = {"plots": False} if "plots" in inspect.signature(run_campaign).parameters else {}
    return run_campaign(folder, evaluator=evaluator, progress=Silent(), mode=mode, **extra)


def _llm_config(base_url: "str | None", **over) -> dict:
    provider = {"name": "scripted", "kind": "openai", "model": "smol", "base_url": base_url,
                "options": {"max_retries": 1, "backoff_s": 0.0, "timeout_s": 30}}
    data = small_config(shapes=[SHAPE], budget={"evaluations_per_shape": 36},
                        operators=[{"name": "param_mutate"}, {"name": "llm_param", "model": "scripted", "prior": 3.0}],
                        llm={"providers": [provider], "concurrency": 4},
                        evaluator={"backend": "simulator", "batch_size": 6})
    data.update(over)
    return data


def _rows(folder: Path, sql: str) -> list:
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# -- concurrency -----------------------------------------------------------------------------------------

def _echo_round(tmp: Path, server: ScriptedServer, executor) -> tuple[list[Offspring], float]:
    provider = OpenAICompatible(name="scripted", model="smol", base_url=server.base_url, max_retries=0, timeout_s=10)
    CampaignDB(tmp / "c.db").close()
    gateway = LlmGateway({"scripted": provider}, tmp / "c.db")
    ops = {"echo@scripted": OperatorEntry("echo@scripted", Echo(), 1.0, "echo", model="scripted")}
    strat = _strategy(ops, make_policy("thompson", list(ops)), llm=gateway, executor=executor)
    _populate(strat)
    t0 = time.monotonic()
    kids = strat.ask(4)
    elapsed = time.monotonic() - t0
    gateway.close()
    return kids, elapsed


def test_llm_calls_of_a_round_overlap_and_give_what_one_by_one_gives(tmp_path):
    delay = 0.6
    with ScriptedServer([{"content": "noted", "stall": delay}]) as server:
        with ThreadPoolExecutor(4) as pool:
            (tmp_path / "a").mkdir()
            kids, side_by_side = _echo_round(tmp_path / "a", server, pool)
        # four calls side by side (a child that repeats a genome already proposed is dropped and its
        # slot asked again, one more call, so there may be more requests than children)
        calls = len(server.requests)
        assert server.max_in_flight == 4 and calls >= 4
        (tmp_path / "b").mkdir()
        again, one_by_one = _echo_round(tmp_path / "b", server, None)
    assert len(server.requests) == 2 * calls                               # the same calls one by one
    # one delay for the four side by side (not four), one for each slot asked again, and some slack
    assert len(kids) == 4 and side_by_side < (1 + (calls - 4) + 1.5) * delay
    assert one_by_one >= calls * delay
    # the same children, parents and recorded calls, whichever request came back first
    assert [(k.genome.id, k.parent_ids, k.meta["llm_call"]) for k in kids] == \
        [(k.genome.id, k.parent_ids, k.meta["llm_call"]) for k in again]


def test_the_same_request_from_side_by_side_calls_is_replayed_to_the_same_call(tmp_path):
    """A live model answers one request differently each time; on resume every call must find its
    own recorded answer, whichever thread reaches the gateway first."""
    counter = iter(range(10 ** 6))
    with ScriptedServer([lambda body: {"content": str(next(counter))}]) as server:
        provider = OpenAICompatible(name="scripted", model="smol", base_url=server.base_url, max_retries=0)
        CampaignDB(tmp_path / "c.db").close()
        ops = {"same@scripted": OperatorEntry("same@scripted", SameQuestion(), 1.0, "same", model="scripted")}
        runs = []
        for _ in range(3):  # the first run asks the server; the others are answered from the database
            gateway = LlmGateway({"scripted": provider}, tmp_path / "c.db")
            with ThreadPoolExecutor(4) as pool:
                strat = _strategy(ops, make_policy("thompson", list(ops)), llm=gateway, executor=pool)
                _populate(strat)
                runs.append([(k.genome.id, k.meta["llm_call"]) for k in strat.ask(4) + strat.ask(4)])
            gateway.close()
            assert len(server.requests) == 8
    assert len({gid for gid, _ in runs[0]}) == 8 and runs[0] == runs[1] == runs[2]


def test_every_child_of_a_multi_child_call_is_kept(tmp_path):
    triple = Triple()
    ops = {"triple": OperatorEntry("triple", triple, 1.0, "triple")}
    strat = _strategy(ops, FirstArm(ops))
    _populate(strat)
    first = strat.ask(2)                     # two calls, six children: two handed out, four queued
    assert len(first) == 2 and len(triple.calls) == 2 and len(strat.queued) == 4
    second = strat.ask(3)                    # served from the queue: no call
    assert len(second) == 3 and len(triple.calls) == 2 and len(strat.queued) == 1
    third = strat.ask(3)                     # the last queued one, then two new calls
    assert len(third) == 3 and len(triple.calls) == 4
    handed = [o.genome.id for o in first + second + third]
    assert len(set(handed)) == len(handed) == 8
    made = [gid for call in triple.calls for gid in call]
    assert set(handed) | {o.genome.id for o in strat.queued} == set(made)     # none dropped
    assert all(o.meta["arm"] == "triple" for o in first + second + third)


# -- operator failures ------------------------------------------------------------------------------------

def test_operator_failures_are_credited_to_their_arm_stored_and_kept_once_on_resume(tmp_path):
    # the three failing kinds come first (a 500 and its retry, garbage, an invalid move), and the
    # arms are drawn by their priors alone, so the count of calls does not depend on the trajectory
    script = [{"status": 500}, {"status": 500}, {"content": "no json here"},
              {"content": json.dumps({"params": {"tile_n": 7}})}, {"content": json.dumps({"params": {"swizzle": 2}})},
              {"raw": "{broken"}]
    folder = tmp_path / "c"
    with ScriptedServer(script) as server:
        data = _llm_config(server.base_url)
        data["operators"] = [{"name": "llm_param", "model": "scripted"}, {"name": "param_mutate", "prior": 0.3}]
        data["selection"] = {"policy": "uniform"}
        state = _run(folder, data).states[SHAPE]
        n_requests = len(server.requests)
        db = CampaignDB(folder / "campaign.db", readonly=True)
        stored = db.operator_failures(SHAPE)
        db.close()
        failures = state.strategy.operator_failures
        assert len(stored) == len(failures) >= 3
        assert {r["arm"] for r in stored} == {"llm_param@scripted"}
        assert [(r["idx"], r["kind"], r["reason"]) for r in stored] == \
            [(i, f["kind"], f["reason"]) for i, f in enumerate(failures)]
        kinds = {r["kind"] for r in stored}
        assert {"garbage", "invalid", "server_error"} <= kinds
        # each failure names the calls it made, recorded with the same outcome
        calls = dict(_rows(folder, "SELECT key, status FROM llm_calls"))
        for row in stored:
            assert row["llm_calls"] and all(key in calls for key in row["llm_calls"])
            if row["kind"] == "server_error":
                assert calls[row["llm_calls"][-1]] == "server_error"
        penalties = [r for arm, r in state.strategy.rewards if arm == "llm_param@scripted" and r == -1.0]
        assert len(penalties) >= len(failures)
        # a resume re-generates the same failures from the recorded calls: stored once, no call made
        _run(folder, data, mode="resume")
        assert len(server.requests) == n_requests
        db = CampaignDB(folder / "campaign.db", readonly=True)
        assert [dict(r, created=0, session=0) for r in db.operator_failures(SHAPE)] == \
            [dict(r, created=0, session=0) for r in stored]
        db.close()


# -- failed genomes as parents -----------------------------------------------------------------------------

NVCC_LOG = "\n".join(
    ['kernel.cu(41): error: identifier "tile_shape_k" is undefined', "      using K = tile_shape_k;", "                ^",
     "", "/cutlass/include/cute/atom/mma_atom.hpp(302): error: static assertion failed", "    static_assert(x);",
     "          detected during:"]
    + [f'            instantiation of "cute::Op<{i}>" at line {i} of /cutlass/include/x.hpp' for i in range(2000)]
    + ['            instantiation of "Kernel" at line 88 of kernel.cu', "",
       '2 errors detected in the compilation of "kernel.cu".'])


def test_a_compile_log_excerpt_keeps_the_errors_and_drops_the_instantiation_noise(tmp_path):
    text = log_excerpt(NVCC_LOG)
    lines = text.splitlines()
    assert len(lines) <= 200 and len(text.encode()) <= 16 * 1024 < len(NVCC_LOG)
    assert lines[0].startswith("kernel.cu(41): error: identifier") and "static assertion failed" in text
    assert "line 88 of kernel.cu" in text and "instantiation line(s) omitted" in text
    assert "cute::Op<1500>" not in text and text.rstrip().endswith('compilation of "kernel.cu".')
    # a failed build's measurement carries it: from the build, or read from a cached build's log file
    log = tmp_path / "build.log"
    log.write_text("nvcc -o kernel.so kernel.cu -Werror\n\n" + NVCC_LOG)
    for build in (BuildResult("g", "k", ok=False, reason="compile error: x", excerpt=text),
                  BuildResult("g", "k", ok=False, reason="compile error: x", log=str(log))):
        m = build_failure(SPACE.sample(random.Random(0)), PROBLEM, build)
        assert m.status == STATUS_COMPILE_FAILED and m.log == text


def test_a_failure_log_is_kept_in_the_database_and_an_old_database_gets_the_column(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE evaluations (genome_id TEXT NOT NULL, problem TEXT NOT NULL, status TEXT NOT NULL, "
                 "device_us REAL, device TEXT, server TEXT, call TEXT, rel_error REAL, reason TEXT, "
                 "simulated INTEGER NOT NULL, build_key TEXT, build_seconds REAL NOT NULL DEFAULT 0, "
                 "gpu_seconds REAL NOT NULL DEFAULT 0, seconds REAL NOT NULL DEFAULT 0, seq INTEGER, session INTEGER, "
                 "created REAL NOT NULL, PRIMARY KEY (genome_id, problem))")
    conn.execute("INSERT INTO evaluations(genome_id, problem, status, simulated, created) VALUES ('old', ?, 'ok', 1, 0)",
                 (SHAPE,))
    conn.commit()
    conn.close()
    db = CampaignDB(path)
    genome = SPACE.sample(random.Random(1))
    db.record_proposals([{"seq": 0, "problem": SHAPE, "round": 0, "genome": genome, "operator": "x"}])
    db.record_evaluation(Measurement(genome.id, SHAPE, STATUS_COMPILE_FAILED, reason="compile error", log=NVCC_LOG[:500]))
    assert db.measurement(genome.id, SHAPE).log == NVCC_LOG[:500]
    assert db.measurement("old", SHAPE).log is None
    db.close()


def test_a_fix_operator_gets_failed_genomes_with_their_log_and_is_passed_over_without_one():
    fixer = Fixer()
    ops = build_operators([{"name": "param_mutate"}])
    ops = {"fixer": OperatorEntry("fixer", fixer, 1.0, "fixer"), **ops}
    policy = FirstArm(ops)
    strat = _strategy(ops, policy)
    _populate(strat)
    kids = strat.ask(2)                          # nothing failed yet: the fixer is passed over, not credited
    assert fixer.seen == [] and policy.updates == [] and strat.operator_failures == []
    assert len(kids) == 2 and all(k.operator == "fallback_sample" for k in kids)
    broken, fine = kids
    strat.tell(broken, Measurement(broken.genome.id, SHAPE, STATUS_COMPILE_FAILED, reason="compile error: x",
                                   log=log_excerpt(NVCC_LOG)))
    strat.tell(fine, SimulatedEvaluator().evaluate([fine.genome], PROBLEM)[0])
    (child,) = strat.ask(1)
    ((parents, failure_of),) = fixer.seen
    assert parents == [broken.genome.id] and child.parent_ids == (broken.genome.id,) and child.meta["arm"] == "fixer"
    assert failure_of == {broken.genome.id: {"status": STATUS_COMPILE_FAILED, "reason": "compile error: x",
                                             "log": log_excerpt(NVCC_LOG)}}
    strat.tell(child, SimulatedEvaluator().evaluate([child.genome], PROBLEM)[0])
    assert [arm for arm, _ in policy.updates] == ["fixer"]     # the fix's reward goes to its arm


class FailingSim:
    """The simulator, where every kernel with tile_k 32 fails to compile with a log."""

    simulated = True

    def __init__(self):
        self.inner = SimulatedEvaluator()

    def describe(self):
        return self.inner.describe()

    def baselines(self, problem):
        return self.inner.baselines(problem)

    def evaluate(self, genomes, problem):
        out = self.inner.evaluate(genomes, problem)
        return [Measurement(g.id, problem.name, STATUS_COMPILE_FAILED, reason="compile error: tile_k",
                            log=f"kernel.cu(9): error: tile_k {g['tile_k']}", simulated=True)
                if g["tile_k"] == 32 else m for g, m in zip(genomes, out)]

    def close(self):
        pass


def test_in_a_campaign_the_fix_operator_sees_the_logs_the_database_keeps(tmp_path):
    data = small_config(shapes=[SHAPE], budget={"evaluations_per_shape": 30}, evaluator={"backend": "simulator"},
                        operators=[{"name": "param_mutate"}, {"name": "test_llm_engine:Fixer", "arm": "fixer"}])
    state = _run(tmp_path / "c", data, evaluator=FailingSim()).states[SHAPE]
    fixer = state.strategy.operators["fixer"].operator
    assert fixer.seen
    logs = dict(_rows(tmp_path / "c", "SELECT genome_id, log FROM evaluations WHERE status='compile_failed'"))
    for parents, failure_of in fixer.seen:
        assert set(parents) == set(failure_of)
        for gid, info in failure_of.items():
            assert info["status"] == STATUS_COMPILE_FAILED and info["log"] == logs[gid]
    fixes = _rows(tmp_path / "c", "SELECT parent_ids FROM proposals WHERE arm='fixer'")
    assert fixes and all(json.loads(p)[0] in logs for (p,) in fixes)


# -- kill -9 and determinism -------------------------------------------------------------------------------

class Gate:
    """Scripted answers that stop after `after` answered requests until opened; counts what it
    answered, by content. Requests held when their process was killed are turned away."""

    def __init__(self, after: int):
        self.after = after
        self.answered: list[str] = []
        self.lock = threading.Lock()
        self.opened = threading.Event()
        self.generation = 0

    def __call__(self, body: dict) -> dict:
        generation = self.generation
        while True:
            with self.lock:
                if self.generation != generation:
                    return {"status": 503, "body": "stale"}
                if self.opened.is_set() or len(self.answered) < self.after:
                    self.answered.append(_content(body["messages"]))
                    return _move_for(body)
            self.opened.wait(0.05)

    def reopen(self) -> None:
        with self.lock:
            self.generation += 1
            self.opened.set()


DRIVER = """
import json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import inspect
from experiments.campaign import create_campaign, run_campaign
from experiments.schema import parse_campaign

class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        pass

folder, data, mode = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()), sys.argv[3]
if not (folder / "campaign.db").exists():
    create_campaign(parse_campaign(data, base_dir=folder.parent), folder)
extra = {{"plots": False}} if "plots" in inspect.signature(run_campaign).parameters else {{}}
run_campaign(folder, progress=Silent(), mode=mode, **extra)
"""


def test_kill_9_mid_campaign_then_resume_repeats_no_llm_call_and_loses_no_evaluation(tmp_path):
    gate = Gate(after=5)
    folder = tmp_path / "c"
    driver, config = tmp_path / "driver.py", tmp_path / "campaign.json"
    driver.write_text(DRIVER.format(tests=str(TESTS)))
    with ScriptedServer([gate]) as server:
        data = _llm_config(server.base_url, evaluator={"backend": "engine_helpers:SlowSimulator", "batch_size": 6,
                                                         "options": {"delay": 0.01}})
        config.write_text(json.dumps(data))
        cmd = [sys.executable, str(driver), str(folder), str(config)]
        proc = subprocess.Popen(cmd + ["run"], cwd=str(REPO), env=cli_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 90
        # kill once the gate holds every further request and all it answered is in the database
        while not (len(gate.answered) >= gate.after and db_count(folder, "llm_calls") == len(gate.answered)):
            assert proc.poll() is None, f"the campaign ended before it could be killed:\n{proc.stdout.read()}"
            assert time.monotonic() < deadline, "timed out waiting for the moment to kill"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        before = set(_rows(folder, "SELECT genome_id, problem, status, device_us, session FROM evaluations"))
        assert before and {s for *_, s in before} == {1}
        gate.reopen()
        done = subprocess.run(cmd + ["resume"], cwd=str(REPO), env=cli_env(), capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
    after = set(_rows(folder, "SELECT genome_id, problem, status, device_us, session FROM evaluations"))
    assert before <= after and len(after) == 36                       # nothing lost, nothing measured again
    assert _rows(folder, "SELECT status, reason FROM shapes") == [("done", "evaluation budget spent")]
    recorded = Counter(_content(json.loads(m)) for (m,) in _rows(folder, "SELECT messages FROM llm_calls"))
    answered = Counter(gate.answered)
    assert answered == recorded and sum(answered.values()) > gate.after   # no request answered twice
    assert _rows(folder, "SELECT COUNT(*) FROM proposals WHERE operator='llm_param'")[0][0] > 0


def test_same_seed_same_campaign_with_side_by_side_calls_and_the_replay_provider(tmp_path):
    with ScriptedServer([_move_for]) as server:
        live = _llm_config(server.base_url)
        _run(tmp_path / "live", live)
    recording = tmp_path / "answers.jsonl"
    with open(recording, "w") as f:
        for messages, text in _rows(tmp_path / "live", "SELECT messages, text FROM llm_calls WHERE status='ok'"):
            f.write(json.dumps({"key": messages_key("smol", json.loads(messages)), "text": text}) + "\n")
    replay = _llm_config(None)
    replay["llm"] = {"providers": [{"name": "scripted", "kind": "test_llm_engine:JitteryReplay", "model": "smol",
                                    "options": {"path": str(recording)}}], "concurrency": 4}
    _run(tmp_path / "a", replay)
    _run(tmp_path / "b", replay)
    llm_state = "SELECT key, status, text FROM llm_calls ORDER BY key"
    failures = "SELECT problem, idx, arm, kind, reason, llm_calls FROM operator_failures ORDER BY idx"
    assert fingerprint(tmp_path / "a") == fingerprint(tmp_path / "b") == fingerprint(tmp_path / "live")
    assert _rows(tmp_path / "a", llm_state) == _rows(tmp_path / "b", llm_state)
    assert _rows(tmp_path / "a", failures) == _rows(tmp_path / "b", failures)
    assert _rows(tmp_path / "a", "SELECT COUNT(*) FROM proposals WHERE operator='llm_param'")[0][0] > 3
    assert not any(s != "ok" for _, s, _ in _rows(tmp_path / "a", llm_state))  # every request was recorded


def test_the_concurrency_setting_has_a_small_default_and_is_checked(tmp_path):
    assert parse_campaign(small_config(), base_dir=tmp_path).llm.concurrency == 4
    assert parse_campaign(small_config(llm={"concurrency": 1}), base_dir=tmp_path).llm.concurrency == 1
    with pytest.raises(ValueError, match="concurrency"):
        parse_campaign(small_config(llm={"concurrency": 0}), base_dir=tmp_path)


# -- patches: frozen parameters reach the operators, unsafe code never reaches a build ---------------

class PatchProbe:
    """Returns a child of its parent with a patch of block `types` (code given), and records the
    `frozen` callable the engine handed it."""

    arity = 1

    def __init__(self, code: str, name: str = "patcher"):
        self.name, self.code, self.frozen_seen = name, code, []

    def __call__(self, parents, ctx):
        from genome.genome import Patch
        self.frozen_seen.append(ctx.frozen)
        child = parents[0].with_patch(Patch(block="epilogue", code=self.code))
        return [Offspring(child, self.name, (parents[0].id,))]


def test_engine_hands_operators_the_frozen_parameters_and_refuses_unsafe_patches():
    from llm_mutators.safety import safety_refusal
    from templates import frozen_params, render

    def source(g):
        return render(g).source

    for code, unsafe in (("  // a harmless epilogue comment, cudaMalloc in a comment is fine\n", False),
                         ("  static void leak() { void* p; cudaMalloc(&p, 64); }\n", True)):
        probe = PatchProbe(code)
        ops = {"patcher": OperatorEntry("patcher", probe, 1.0, name="patcher")}
        strat = _strategy(ops, make_policy("uniform", ["patcher"], {"patcher": 1.0}, {}), frozen=frozen_params,
                          check=lambda g: safety_refusal(g, source))
        _populate(strat)
        children = strat.ask(4)
        assert probe.frozen_seen and all(f is frozen_params for f in probe.frozen_seen)
        patched = [c for c in children if c.genome.patches]
        if unsafe:
            assert not patched, "an unsafe patch was proposed"
            kinds = {f["kind"] for f in strat.operator_failures}
            assert kinds == {"unsafe"} and "cudaMalloc" in strat.operator_failures[0]["reason"]
        else:
            assert patched and not strat.operator_failures
            # the epilogue block renders the epilogue subtile, and its wg_split n branch the tile N: a patch of it
            # fixes those parameters (the template's text, whichever branch this genome takes), and no other
            assert frozen_params(patched[0].genome) == frozenset({"epilogue_tile", "wg_split", "tile_n"})


class HistoryProbe:
    arity = 1

    def __init__(self, name: str = "probe"):
        self.name, self.histories = name, []

    def __call__(self, parents, ctx):
        self.histories.append((parents[0].id, dict(ctx.history)))
        return [Offspring(ctx.space.mutate(parents[0], ctx.rng), self.name, (parents[0].id,))]


def test_prompts_see_the_gpu_each_baseline_and_the_parents_time():
    from llm_mutators.param_op import LlmParam
    from genome import OperatorContext
    probe = HistoryProbe()
    ops = {"probe": OperatorEntry("probe", probe, 1.0, name="probe")}
    facts = {"gpu": "NVIDIA H200 (132 SMs)", "baselines": {"cublaslt_heuristic": 6.25, "torch_tn": 6.5}}
    strat = _strategy(ops, make_policy("uniform", ["probe"], {"probe": 1.0}, {}), facts=facts)
    _populate(strat)
    strat.ask(2)
    parent_id, history = probe.histories[0]
    assert history["gpu"] == facts["gpu"] and history["baselines"] == facts["baselines"]
    assert history["times"][parent_id] > 0
    parent = strat.known[parent_id].genome
    ctx = OperatorContext(space=SPACE, problem=PROBLEM, rng=random.Random(0), history=history)
    text = LlmParam(model="m").messages(parent, ctx)[1]["content"]
    assert "NVIDIA H200 (132 SMs)" in text and "cublaslt_heuristic 6.25 us" in text and "torch_tn 6.50 us" in text
    assert f"takes {history['times'][parent_id]:.2f} us" in text


# -- resume after the prompts changed --------------------------------------------------------------------------

def test_a_resume_after_the_prompts_changed_answers_from_the_record_and_says_so(tmp_path, monkeypatch):
    """Scoped requests are keyed by their place, not their text: after a code change that alters
    the prompts, a resume finds every recorded answer (no paid call again), notes the change once
    in the log, and re-generates the same campaign."""
    import jinja2

    import llm_mutators.param_op as param_op

    moves = [{"content": json.dumps({"params": {"swizzle": s}, "reason": "try"})} for s in (1, 2, 4, 8)]
    folder = tmp_path / "c"
    with ScriptedServer(moves) as server:
        data = _llm_config(server.base_url)
        _run(folder, data)
        asked = len(server.requests)
        before = fingerprint(folder)
        assert asked > 0
        changed = tmp_path / "prompts"
        changed.mkdir()
        original = (Path(param_op.PROMPTS) / "param.j2").read_text()
        (changed / "param.j2").write_text(original + "\nAnswer briefly.\n")
        monkeypatch.setattr(param_op, "prompt_environment", lambda: jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(changed)), undefined=jinja2.StrictUndefined, autoescape=False,
            keep_trailing_newline=True))
        _run(folder, data, mode="resume")
        assert len(server.requests) == asked                     # nothing asked again
    assert fingerprint(folder) == before
    log = (folder / "campaign.log").read_text()
    assert log.count("LLM requests differ from the ones recorded") == 1


def test_calls_recorded_under_the_older_keys_are_still_found(tmp_path):
    """Campaigns recorded when scoped requests were keyed by their text keep their answers."""
    db = CampaignDB(tmp_path / "campaign.db")
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    db.record_llm_call(f"{messages_key('smol', msgs)}:scope7:0", "smol", msgs, status="ok", text="recorded", tokens=5)
    db.close()
    gateway = LlmGateway({}, tmp_path / "campaign.db")     # no provider: a call made would fail
    try:
        got = gateway("smol", msgs, scope="scope7")
        assert (got.text, got.tokens) == ("recorded", 5) and gateway.prompt_changes == 0
    finally:
        gateway.close()


def test_ucb_counts_every_child_of_a_multi_child_call_in_flight(tmp_path):
    """One pull, three children, each told later: UCB's count of pulls in flight takes all three,
    so telling them brings it back to zero rather than eating the counts of other pulls (a review
    of session 24 found the count decremented per child but incremented per pull)."""
    triple = Triple()
    ops = {"triple": OperatorEntry("triple", triple, 1.0, "triple")}
    policy = make_policy("ucb", list(ops))
    strat = _strategy(ops, policy)
    _populate(strat)
    first = strat.ask(1)                     # one call, three children: one handed out, two queued
    assert len(triple.calls) == 1 and len(strat.queued) == 2
    assert policy.stats()["triple"]["pending"] == 3
    second = strat.ask(2)                    # the two queued ones, no call
    assert len(triple.calls) == 1 and policy.stats()["triple"]["pending"] == 3
    for child in first + second:
        strat.tell(child, Measurement(child.genome.id, "1024x1024x1024", STATUS_OK,
                                      device=Timing(10.0, 10.0, 10.0, 5)))
    assert policy.stats()["triple"]["pending"] == 0
