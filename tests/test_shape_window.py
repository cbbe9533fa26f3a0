"""Shapes searched side by side (`population.shapes_in_flight`, evolution/windows.py): they really
run at once on an evaluator with lanes, the search is the same as on an evaluator that runs them in
turn, a crash in one shape stops the others and a resume finishes the campaign in the same state as
an uninterrupted run, with nothing measured twice."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from engine_helpers import fingerprint, small_config
from experiments.campaign import create_campaign, run_campaign
from experiments.schema import parse_campaign
from test_resume import Killed, KillSwitch, Silent

SHAPES = ["1024x1024x1024", "2048x1024x1024", "128x4096x4096", "512x512x4096"]


class LaneSim:
    """The simulator (noise 0) with `lanes` lanes, a delay per evaluate call, and a record of which
    thread evaluated which shape when (to prove shapes overlapped)."""

    def __init__(self, lanes: int, delay: float = 0.0):
        from evaluator.simulator import SimulatedEvaluator
        self.inner = SimulatedEvaluator()
        self.simulated = True
        self.lanes = lanes
        self.delay = delay
        self.calls: list = []
        self.spans: list = []  # (problem, thread name, start, end)
        self.assigned: dict[str, int] = {}
        self._lock = threading.Lock()

    def describe(self):
        return self.inner.describe()

    def baselines(self, problem):
        return self.inner.baselines(problem)

    def assign(self, problem, lane):
        self.assigned[problem.name] = lane

    def evaluate(self, genomes, problem):
        t0 = time.monotonic()
        time.sleep(self.delay)
        out = self.inner.evaluate(genomes, problem)
        with self._lock:
            self.calls += [(g.id, problem.name) for g in genomes]
            self.spans.append((problem.name, threading.current_thread().name, t0, time.monotonic()))
        return out

    def close(self):
        pass


def _config(tmp: Path, window: int):
    data = small_config(shapes=SHAPES, budget={"evaluations_per_shape": 24})
    data["evaluator"] = {"backend": "simulator", "batch_size": 4}
    data["population"]["shapes_in_flight"] = window
    return parse_campaign(data, base_dir=tmp)


def _run(folder: Path, evaluator, mode: str = "run"):
    return run_campaign(folder, evaluator=evaluator, progress=Silent(), mode=mode)


def shape_fingerprint(folder: Path) -> dict:
    return fingerprint(folder, per_shape=True)


def _overlapping(spans) -> bool:
    """Two different shapes were being evaluated at the same moment on different threads."""
    return any(a[0] != b[0] and a[1] != b[1] and a[2] < b[3] and b[2] < a[3] for a in spans for b in spans)


@pytest.fixture(scope="module")
def in_turn(tmp_path_factory):
    """shapes_in_flight 2 on an evaluator with one lane: the same search, shapes one after another."""
    tmp = tmp_path_factory.mktemp("turn")
    create_campaign(_config(tmp, 2), tmp / "c")
    ev = LaneSim(lanes=1)
    _run(tmp / "c", ev)
    assert not _overlapping(ev.spans)
    assert len({s[1] for s in ev.spans}) == 1  # one lane thread did all the work
    return shape_fingerprint(tmp / "c")


def test_shapes_run_side_by_side_and_search_the_same(tmp_path, in_turn):
    create_campaign(_config(tmp_path, 2), tmp_path / "c")
    ev = LaneSim(lanes=4, delay=0.02)
    _run(tmp_path / "c", ev)
    assert _overlapping(ev.spans), "no two shapes were evaluated at the same time"
    assert len(ev.calls) == len(set(ev.calls)) == in_turn["evaluated"].__len__()
    assert sorted(set(ev.assigned.values())) == [0, 1]  # two lanes: window 2 caps the evaluator's 4
    assert shape_fingerprint(tmp_path / "c") == in_turn
    log = (tmp_path / "c" / "campaign.log").read_text()
    assert "shapes in flight: up to 2 (2 at once on this evaluator)" in log


def test_window_inputs_come_only_from_shapes_done_before(tmp_path):
    """Shape i (window 2) is seeded from shapes <= i - 2 only: with window 1 shape 1 takes seeds from
    shape 0's hall of fame; with window 2 it has none to take, and shape 2 has shape 0's."""
    operators = {}
    for window in (1, 2):
        folder = tmp_path / f"w{window}"
        create_campaign(_config(tmp_path, window), folder)
        _run(folder, LaneSim(lanes=2))
        conn = sqlite3.connect(str(folder / "campaign.db"))
        operators[window] = {shape: {row[0] for row in conn.execute(
            "SELECT operator FROM proposals WHERE problem=? AND round=0", (shape,))} for shape in SHAPES[:3]}
        conn.close()
    assert "seed_nearest" in operators[1][SHAPES[1]]
    assert "seed_nearest" not in operators[2][SHAPES[1]]
    assert "seed_nearest" in operators[2][SHAPES[2]]


def test_crash_in_one_shape_stops_the_others_and_resume_completes(tmp_path, monkeypatch, in_turn):
    for after in (9, 40, 75):
        folder = tmp_path / f"k{after}"
        create_campaign(_config(tmp_path, 2), folder)
        with monkeypatch.context() as m:
            KillSwitch(m, after=after)
            with pytest.raises(Killed):
                _run(folder, LaneSim(lanes=2, delay=0.01))
        conn = sqlite3.connect(str(folder / "campaign.db"))
        before = set(conn.execute("SELECT genome_id, problem FROM evaluations").fetchall())
        conn.close()
        ev = LaneSim(lanes=2, delay=0.01)
        _run(folder, ev, mode="resume")
        assert not set(ev.calls) & before, f"kill after commit {after}: finished evaluations were run again"
        assert len(ev.calls) == len(set(ev.calls))
        assert shape_fingerprint(folder) == in_turn, f"kill after commit {after}: resumed state differs"


def test_budget_grants_wait_for_the_first_pass_and_replay(tmp_path):
    """`evogemm extend` after a side-by-side campaign: every shape takes its grant after all shapes
    ran once, spends it, and a further resume replays the whole campaign without measuring anything."""
    from experiments.campaign_changes import extend_campaign
    folder = tmp_path / "c"
    create_campaign(_config(tmp_path, 2), folder)
    _run(folder, LaneSim(lanes=2))
    extend_campaign(folder, evaluations=6)
    ev = LaneSim(lanes=2, delay=0.01)
    _run(folder, ev, mode="resume")
    conn = sqlite3.connect(str(folder / "campaign.db"))
    counts = dict(conn.execute("SELECT problem, COUNT(*) FROM evaluations GROUP BY problem").fetchall())
    status = {row[0] for row in conn.execute("SELECT status FROM shapes")}
    conn.close()
    assert counts == {shape: 30 for shape in SHAPES} and status == {"done"}
    assert len(ev.calls) == 4 * 6
    state = shape_fingerprint(folder)
    reopened = _events(folder, "shape_reopened")
    assert reopened == 4                         # each shape reopened once, by its grant
    again = LaneSim(lanes=2)
    _run(folder, again, mode="resume")
    assert again.calls == [] and shape_fingerprint(folder) == state
    assert _events(folder, "shape_reopened") == reopened   # a replayed grant reopens nothing


def _events(folder: Path, kind: str) -> int:
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        return conn.execute("SELECT COUNT(*) FROM events WHERE kind=?", (kind,)).fetchone()[0]
    finally:
        conn.close()


def test_shapes_side_by_side_share_the_wall_budget_instead_of_summing_it():
    """With W shapes running at once, a shape gets the wall left over the turns still to come
    (ceil(shapes left / W)); the shapes beside it reserve none of it. In turn (W = 1) the in-flight
    shapes' allocations are reserved in full, as before."""
    from types import SimpleNamespace

    from evolution.budget import allocation
    budget = SimpleNamespace(evaluations_per_shape=38, total_evaluations=None, gpu_seconds=None, wall_seconds=500.0,
                             llm_tokens=None)
    beside = [{"evaluations": 38, "wall_seconds": 500.0 / 7}]
    assert allocation(budget, 14, [], 0.0, side_by_side=2)["wall_seconds"] == pytest.approx(500.0 / 7)
    assert allocation(budget, 13, [], 0.0, beside, side_by_side=2)["wall_seconds"] == pytest.approx(500.0 / 7)
    assert allocation(budget, 12, [], 100.0, beside, side_by_side=2)["wall_seconds"] == pytest.approx(400.0 / 6)
    assert allocation(budget, 1, [], 490.0, side_by_side=2)["wall_seconds"] == pytest.approx(10.0)
    assert allocation(budget, 13, [], 0.0, beside)["wall_seconds"] == pytest.approx((500.0 - 500.0 / 7) / 13)
    assert allocation(budget, 14, [], 0.0, side_by_side=3)["evaluations"] == 38
