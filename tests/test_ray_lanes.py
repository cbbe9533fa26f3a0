"""Shapes side by side on Ray's GPU actors (`population.shapes_in_flight`, `RayEvaluator.lanes`):
with two (stand-in) GPU actors, two shapes are searched at once, each on its own actor; with one
actor the two shapes take turns on it; both campaigns end in the same state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine_helpers import small_config
from genome import Problem
from test_ray_backend import FakeGpu, compiler, local_ray
from test_shape_window import shape_fingerprint

SHAPES = ["1024x1024x1024", "2048x1024x1024", "128x4096x4096", "512x512x4096"]


@pytest.fixture(scope="module")
def two_gpus(tmp_path_factory):
    """A local Ray instance with two (fake) GPUs and the fake nvcc."""
    with local_ray(tmp_path_factory.mktemp("ray2"), num_gpus=2) as nvcc:
        yield nvcc


def _campaign(tmp_path: Path, nvcc: Path, name: str, gpus: int) -> "tuple[Path, dict]":
    from evaluator.ray_evaluator import RayEvaluator
    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign

    class Silent:
        def update(self, rows, simulated=None, evaluator=None):
            pass

    data = small_config(shapes=SHAPES, budget={"evaluations_per_shape": 12})
    data["population"]["shapes_in_flight"] = 2
    config = parse_campaign(data, base_dir=tmp_path)
    folder = tmp_path / name
    create_campaign(config, folder)
    ev = RayEvaluator(runner="gpu", gpus=gpus, compiler=compiler(nvcc, tmp_path / name / "kernels"),
                      worker_cache_dir=tmp_path / name / "worker", gpu_cache_dir=tmp_path / name / "gpu",
                      gpu_class=FakeGpu, build_memory_gb=0.2, actor_cpus=0)  # 2 CPUs: both build
    try:
        assert ev.lanes >= 2
        run_campaign(folder, evaluator=ev, progress=Silent())
        stats = ev.stats(fresh=True)
    finally:
        ev.close()
    return folder, stats


def test_two_gpu_actors_search_two_shapes_at_once_like_one_actor_in_turn(two_gpus, tmp_path):
    one, one_stats = _campaign(tmp_path, two_gpus, "one", gpus=1)
    two, two_stats = _campaign(tmp_path, two_gpus, "two", gpus=2)
    assert one_stats["gpu_actors"] == 1 and two_stats["gpu_actors"] == 2
    assert all(busy > 0 for busy in two_stats["gpu_busy_by_actor"])      # both actors timed kernels
    log = (two / "campaign.log").read_text()
    assert "on lane 0" in log and "on lane 1" in log and "2 at once" in log
    one_log = (one / "campaign.log").read_text()
    assert "2 at once" in one_log and "on lane 1" in one_log            # two shapes take turns on one actor
    a, b = shape_fingerprint(one), shape_fingerprint(two)
    assert len(a["evaluated"]) == 4 * 12 and any(row[2] == "ok" for row in a["evaluated"])
    assert a == b


class CrashingGpu(FakeGpu):
    """A FakeGpu whose actor process dies in `run` while the count in the file `crashes` (beside
    its cache) is above zero; each death takes one off the count first."""

    def run(self, problem, items):
        counter = self.cache_dir.parent / "crashes"
        left = int(counter.read_text()) if counter.exists() else 0
        if left > 0:
            counter.write_text(str(left - 1))
            os._exit(1)
        return super().run(problem, items)


def _crash_campaign(tmp_path: Path, nvcc: Path, name: str, gpus: int, crashes: int) -> "tuple[Path, dict]":
    from evaluator.ray_evaluator import RayEvaluator
    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign

    class Silent:
        def update(self, rows, simulated=None, evaluator=None):
            pass

    data = small_config(shapes=SHAPES[:2], budget={"evaluations_per_shape": 8})  # shapes in turn
    folder = tmp_path / name
    create_campaign(parse_campaign(data, base_dir=tmp_path), folder)
    (folder / "crashes").write_text(str(crashes))
    ev = RayEvaluator(runner="gpu", gpus=gpus, compiler=compiler(nvcc, folder / "kernels"),
                      worker_cache_dir=folder / "worker", gpu_cache_dir=folder / "gpu",
                      gpu_class=CrashingGpu, build_memory_gb=0.2, actor_cpus=0)
    try:
        run_campaign(folder, evaluator=ev, progress=Silent())
        stats, failures = ev.stats(fresh=True), list(ev.actor_failures)
    finally:
        ev.close()
    assert (folder / "crashes").read_text() == "0"
    return folder, {"stats": stats, "failures": failures}


def test_a_gpu_actor_that_dies_costs_only_its_call_which_is_made_again(two_gpus, tmp_path):
    calm, _ = _crash_campaign(tmp_path, two_gpus, "calm", 1, 0)
    once, seen = _crash_campaign(tmp_path, two_gpus, "once", 1, 1)       # Ray restarts the actor: same actor again
    assert [f["attempt"] for f in seen["failures"]] == [0] and seen["stats"]["actor_failures"] == 1
    assert shape_fingerprint(once) == shape_fingerprint(calm)
    gone, seen = _crash_campaign(tmp_path, two_gpus, "gone", 2, 2)       # dies again after its restart: for good
    assert [(f["actor"], f["attempt"]) for f in seen["failures"]] == [(0, 0), (0, 1)]
    assert shape_fingerprint(gone) == shape_fingerprint(calm)              # the other actor took the shape


def test_stats_do_not_wait_behind_an_actors_queue(two_gpus, tmp_path):
    """The engine asks for stats every round: the actors' figures come from a call made in the
    background (an actor runs one call at a time), so stats() returns at once."""
    import time as _time

    from evaluator.ray_evaluator import RayEvaluator
    ev = RayEvaluator(runner="gpu", gpus=1, compiler=compiler(two_gpus, tmp_path / "k"), worker_cache_dir=tmp_path / "w",
                      gpu_cache_dir=tmp_path / "g", gpu_class=SlowGpu, build_memory_gb=0.2, actor_cpus=0)
    try:
        busy = ev.actors[0].baselines.remote(Problem.parse("256x256x256"))   # the actor is busy for 3 s
        t0 = _time.monotonic()
        first = ev.stats()
        assert _time.monotonic() - t0 < 1.0 and first["gpu_busy_by_actor"] == [0.0]
        ev.ray.get(busy)
        deadline = _time.monotonic() + 10
        while ev.stats()["gpu_busy_by_actor"] != [3.0]:   # the background call answered after the sleep
            assert _time.monotonic() < deadline
            _time.sleep(0.1)
    finally:
        ev.close()


class SlowGpu(FakeGpu):
    def baselines(self, problem):
        import time as _time
        _time.sleep(3.0)
        self.busy += 3.0
        return super().baselines(problem)
