"""The worker pool's blame / restart logic, against a fake worker process (no GPU needed)."""

import os
from pathlib import Path

import pytest

from evaluator.worker_pool import WorkerPool
from genome import Problem

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def pool(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", str(TESTS) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = WorkerPool(silence_timeout_s=3, log_dir=tmp_path, worker_module="fake_gpu_worker")
    yield p
    p.close()


def specs(*ids):
    return [{"id": i, "lib": "/nonexistent.so", "knobs": []} for i in ids]


def test_crash_hang_and_fault_cost_only_their_kernel(pool):
    result = pool.measure(Problem(64, 64, 64), specs("good-a", "crash-1", "good-bb", "hang-2", "fault-3", "good-ccc"),
                          [], ["device"], {}, seed=0)
    assert set(result.kernels) == {"good-a", "good-bb", "good-ccc"}
    assert result.kernels["good-bb"]["device"]["median_us"] == len("good-bb")
    assert result.failures["crash-1"][0] == "crashed" and "exit code" in result.failures["crash-1"][1]
    assert result.failures["hang-2"][0] == "timeout" and "no progress for 3 s" in result.failures["hang-2"][1]
    assert result.failures["fault-3"][0] == "crashed" and "canary" in result.failures["fault-3"][1]
    assert result.restarts == 3 and pool.restarts == 3
    # the pool is healthy afterwards
    again = pool.measure(Problem(64, 64, 64), specs("good-d"), [], ["device"], {}, seed=1)
    assert set(again.kernels) == {"good-d"} and again.restarts == 0


def test_worker_log_is_kept(pool, tmp_path):
    pool.measure(Problem(8, 8, 8), specs("good"), [], ["device"], {}, seed=0)
    assert (tmp_path / "gpu0-worker.log").exists()


def test_requests_from_shapes_side_by_side_take_turns_on_the_worker(pool):
    """Two shapes searched side by side on one GPU (GpuEvaluator.lanes): their measure requests
    come from two threads, and the worker runs one at a time, so no timing shares the GPU."""
    import threading
    import time

    from evaluator.gpu import GpuEvaluator
    assert GpuEvaluator.lanes > 1
    inside, most = [0], [0]
    guard = threading.Lock()
    real = pool.worker.request

    def request(req, timeout):
        with guard:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)
        try:
            return real(req, timeout)
        finally:
            with guard:
                inside[0] -= 1
    pool.worker.request = request
    results = {}

    def shape(n):
        results[n] = [pool.measure(Problem(64, 64, n), specs(f"good-{n}-{i}"), [], ["device"], {}, seed=i)
                      for i in range(3)]
    threads = [threading.Thread(target=shape, args=(n,)) for n in (64, 128, 256)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert {n: [set(r.kernels) for r in rs] for n, rs in results.items()} == \
        {n: [{f"good-{n}-{i}"} for i in range(3)] for n in (64, 128, 256)}
