"""Resume after a crash: the resumed campaign ends in exactly the state of an uninterrupted one
(same evaluations, proposals, hall of fame, policy states and counters), and no evaluation that
was committed before the crash is run again.

Two levels: in-process, the process "dies" right after the N-th database commit for many N (every
kind of moment: mid-round, between proposals and evaluations, after a policy-log row, at a shape
boundary); and real `kill -9` of `python -m experiments.cli run` subprocesses on the simulator.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import evolution.db as dbmod
from engine_helpers import REPO, cli_env, db_count, fingerprint, small_config
from experiments.campaign import create_campaign, run_campaign
from experiments.schema import parse_campaign


class Killed(BaseException):
    """Stands for SIGKILL: not an Exception, so nothing on the way out can swallow it."""


class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        pass


class KillSwitch:
    """Patches the database's transactions: after `after` commits the process is 'dead': the commit
    that made the count happens, then Killed is raised, and every later write fails too."""

    def __init__(self, monkeypatch, after: int):
        self.after, self.commits, self.dead = after, 0, False
        original_enter = dbmod._Transaction.__enter__
        original_exit = dbmod._Transaction.__exit__
        switch = self

        def enter(tx):
            if switch.dead:
                raise Killed("dead")
            return original_enter(tx)

        def exit_(tx, et, e, tb):
            result = original_exit(tx, et, e, tb)
            if et is None:
                switch.commits += 1
                if switch.commits >= switch.after:
                    switch.dead = True
                    raise Killed(f"killed after commit {switch.commits}")
            return result

        monkeypatch.setattr(dbmod._Transaction, "__enter__", enter)
        monkeypatch.setattr(dbmod._Transaction, "__exit__", exit_)


def _config(tmp: Path):
    data = small_config(budget={"evaluations_per_shape": 30})
    data["evaluator"] = {"backend": "simulator", "batch_size": 4}
    return parse_campaign(data, base_dir=tmp)


def _run(folder: Path, evaluator=None, mode="run"):
    return run_campaign(folder, evaluator=evaluator, progress=Silent(), mode=mode)


def _committed(folder: Path) -> set:
    import sqlite3
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return set(conn.execute("SELECT genome_id, problem FROM evaluations").fetchall())
    finally:
        conn.close()


class CountingSim:
    """The simulator (noise 0), recording what it is asked to evaluate."""

    def __init__(self):
        from evaluator.simulator import SimulatedEvaluator
        self.inner = SimulatedEvaluator()
        self.simulated = True
        self.calls: list = []

    def describe(self):
        return self.inner.describe()

    def baselines(self, problem):
        return self.inner.baselines(problem)

    def evaluate(self, genomes, problem):
        self.calls += [(g.id, problem.name) for g in genomes]
        return self.inner.evaluate(genomes, problem)

    def close(self):
        pass


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ref")
    create_campaign(_config(tmp), tmp / "c")
    ev = CountingSim()
    _run(tmp / "c", ev)
    fp = fingerprint(tmp / "c")
    assert fp["counters"]["evaluations"] == 90 and len(ev.calls) == 90
    return fp


def _total_commits(tmp: Path, monkeypatch) -> int:
    switch = KillSwitch(monkeypatch, after=10 ** 9)
    create_campaign(_config(tmp), tmp / "count")
    _run(tmp / "count", CountingSim())
    monkeypatch.undo()
    return switch.commits


def test_crash_after_any_commit_then_resume_equals_uninterrupted(tmp_path, monkeypatch, reference):
    total = _total_commits(tmp_path, monkeypatch)
    assert total > 100
    points = sorted(set(list(range(1, 12)) + list(range(12, total, 9)) + [total - 2, total - 1]))
    for n in points:
        folder = tmp_path / f"k{n}"
        create_campaign(_config(tmp_path), folder)
        with monkeypatch.context() as m:
            KillSwitch(m, after=n)
            with pytest.raises(Killed):
                _run(folder, CountingSim())
        before = _committed(folder)
        ev = CountingSim()
        _run(folder, ev, mode="resume")
        again = set(ev.calls) & before
        assert not again, f"kill after commit {n}: {len(again)} finished evaluation(s) were run again"
        assert len(ev.calls) == len(set(ev.calls))
        assert fingerprint(folder) == reference, f"kill after commit {n}: resumed state differs"


def test_repeated_crashes_in_one_campaign(tmp_path, monkeypatch, reference):
    folder = tmp_path / "c"
    create_campaign(_config(tmp_path), folder)
    evaluated: list = []
    for n in (3, 17, 25, 1, 2, 20):
        with monkeypatch.context() as m:
            KillSwitch(m, after=n)
            ev = CountingSim()
            with pytest.raises(Killed):
                _run(folder, ev, mode="resume")
            evaluated += ev.calls
    ev = CountingSim()
    _run(folder, ev, mode="resume")
    assert fingerprint(folder) == reference
    # resuming a finished campaign replays it without evaluating anything
    ev2 = CountingSim()
    _run(folder, ev2, mode="resume")
    assert ev2.calls == [] and fingerprint(folder) == reference


def test_replay_mismatch_fails_loudly(tmp_path):
    config = _config(tmp_path)
    create_campaign(config, tmp_path / "c")
    _run(tmp_path / "c", CountingSim())
    import sqlite3
    conn = sqlite3.connect(str(tmp_path / "c" / "campaign.db"))
    conn.execute("UPDATE proposals SET operator='tampered' WHERE seq=20")
    conn.commit()
    conn.close()
    with pytest.raises(dbmod.ReplayMismatch) as info:
        _run(tmp_path / "c", CountingSim(), mode="resume")
    assert "proposal #20" in str(info.value) and "tampered" in str(info.value)


# -- real kill -9 of the CLI ------------------------------------------------------------------------

CAMPAIGN = """
    name: killme
    seed: 5
    shapes: ["1024x1024x1024", "2048x1024x1024", "128x4096x4096"]
    budget: {evaluations_per_shape: 40}
    population: {size: 6, islands: 2, offspring: 3, migration_interval: 2, migration_size: 1, elite: 1}
    selection: {policy: thompson}
    evaluator:
      backend: "tests.engine_helpers:SlowSimulator"
      batch_size: 3
      options: {delay: 0.02}
"""


def _cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "experiments.cli", *args], cwd=str(REPO), env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def _finish(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "experiments.cli", *args], cwd=str(REPO), env=cli_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"campaign ended before it could be killed (rc {proc.returncode}):\n{out}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("timed out waiting for the moment to kill")
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def test_kill_9_at_several_moments_then_resume(tmp_path):
    yaml_path = tmp_path / "killme.yaml"
    yaml_path.write_text(textwrap.dedent(CAMPAIGN))
    ref, k = tmp_path / "ref", tmp_path / "killed"
    out = _finish("run", str(yaml_path), "--out", str(ref), "--no-live")
    assert "SIMULATOR" in out
    expected = fingerprint(ref)
    assert expected["counters"]["evaluations"] == 120

    # 1: in the very first moments: as soon as the folder holds campaign.yaml (before any evaluation)
    proc = _cli("run", str(yaml_path), "--out", str(k), "--no-live")
    _kill_when(proc, lambda: (k / "campaign.yaml").exists())
    assert db_count(k) <= 0
    # 2: mid-run, in the first shape
    proc = _cli("resume", str(k), "--no-live")
    _kill_when(proc, lambda: db_count(k) >= 25)
    mid = db_count(k)
    assert 25 <= mid < 120
    # 3: later, in another shape
    proc = _cli("resume", str(k), "--no-live")
    _kill_when(proc, lambda: db_count(k) >= 70)
    assert 70 <= db_count(k) < 120
    _finish("resume", str(k), "--no-live")
    got = fingerprint(k)
    assert got == expected
    status = _finish("status", str(k))
    assert "1024x1024x1024" in status and "SIMULATED" in status


def test_kill_9_before_the_folder_is_complete(tmp_path):
    """Killed within ~0.1-0.6 s of starting: whatever exists then, `resume` (or `run` when nothing
    was written) finishes the campaign, identical to an uninterrupted one."""
    yaml_path = tmp_path / "killme.yaml"
    yaml_path.write_text(textwrap.dedent(CAMPAIGN).replace("evaluations_per_shape: 40", "evaluations_per_shape: 12"))
    ref = tmp_path / "ref"
    _finish("run", str(yaml_path), "--out", str(ref), "--no-live")
    expected = fingerprint(ref)
    for i, wait in enumerate((0.1, 0.35, 0.6)):
        k = tmp_path / f"k{i}"
        proc = _cli("run", str(yaml_path), "--out", str(k), "--no-live")
        time.sleep(wait)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if (k / "campaign.yaml").exists():
            _finish("resume", str(k), "--no-live")
        else:
            _finish("run", str(yaml_path), "--out", str(k), "--no-live")
        assert fingerprint(k) == expected, f"killed after {wait} s"
