"""The Ray backend on a local Ray instance (2 CPUs, one logical GPU, no real one): builds spread over Ray workers, a
build worker killed mid-build (retried, or a clean failure), the kernel moved through the object
store into the driver's cache, and a campaign on `backend: ray` (simulator timing) that ends in the
same state as the same campaign on the single-machine simulator backend.

Builds use a fake nvcc (a Python script: it sleeps, writes a dummy .so and a ptxas report), so the
tests run in seconds; the real nvcc build path is Compiler.build, the same on a worker. One test
(marked `nvcc`, skipped without it) builds two real kernels on Ray workers during a campaign.
Resume after kill -9 on this backend: tests/test_ray_resume.py.
"""

from __future__ import annotations

import contextlib

import json
import os
import random
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

from engine_helpers import fingerprint, small_config
from evaluator.compile import Compiler, Toolchain
from genome import Genome, Problem
from templates import get_space

SPACE = get_space("sm90_cutlass")
PROBLEM = Problem(1024, 1024, 1024)
TESTS = Path(__file__).resolve().parent

FAKE_NVCC = """#!/usr/bin/env python3
import hashlib, os, sys, time, pathlib
me = pathlib.Path(sys.argv[0])
args = sys.argv[1:]
if "--version" in args:
    print("Cuda compilation tools, release 0.0, fake")
    sys.exit(0)
out = pathlib.Path(args[args.index("-o") + 1])
src = pathlib.Path(args[args.index("-o") - 1])
hold, pid = me.with_suffix(".hold"), me.with_suffix(".pid")
if hold.exists() and not pid.exists():      # the first build after a hold: say who builds it, then wait
    pid.write_text(str(os.getppid()))       # the parent is the Ray worker running the build task
    for _ in range(600):
        if not hold.exists():
            break
        time.sleep(0.05)
    if os.getppid() != int(pid.read_text()):  # its worker was killed meanwhile: die with it
        sys.exit(1)
with open(me.with_suffix(".calls"), "a") as fh:
    fh.write(f"{os.getppid()} {src.parent.name}\\n")
time.sleep(0.3)
out.write_bytes(b"fake kernel " + hashlib.sha256(src.read_bytes()).hexdigest().encode())
print("ptxas info    : Used 96 registers, used 1 barriers")
print("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads")
"""


@contextlib.contextmanager
def local_ray(root: Path, num_gpus: int):
    """A local Ray instance (2 CPUs, `num_gpus` stand-in GPUs) whose workers see a fake nvcc
    (EVOGEMM_NVCC, written in `root`, yielded) and can import the test modules (PYTHONPATH)."""
    ray = pytest.importorskip("ray")
    nvcc = root / "fake-nvcc"
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(0o755)
    saved = {k: os.environ.get(k) for k in ("EVOGEMM_NVCC", "PYTHONPATH")}
    os.environ["EVOGEMM_NVCC"] = str(nvcc)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), saved["PYTHONPATH"]) if p)
    ray.init(num_cpus=2, num_gpus=num_gpus, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        yield nvcc
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def ray_local(tmp_path_factory):
    """One local Ray instance for the module (starting one takes seconds)."""
    with local_ray(tmp_path_factory.mktemp("ray"), num_gpus=1) as nvcc:
        yield nvcc


@pytest.fixture
def nvcc(ray_local):
    for suffix in (".calls", ".hold", ".pid"):
        ray_local.with_suffix(suffix).unlink(missing_ok=True)
    return ray_local


class FakeGpu:
    """Stands in for GpuEvaluator inside a GPU actor (same constructor and methods): it loads each
    kernel from the actor's own cache and 'times' it from the library's bytes."""

    def __init__(self, cache_dir, gpu, families, **options):
        self.cache_dir, self.busy = Path(cache_dir), 0.0
        self.visible = os.environ.get("CUDA_VISIBLE_DEVICES")

    def describe(self):
        return f"fake GPU {self.visible}"

    def baselines(self, problem):
        from evaluator.api import BaselineSet, Timing
        return BaselineSet(problem.name, device={"torch_tn": Timing(100.0, 99.0, 101.0, 5)})

    def set_reference(self, problem, baselines):
        return "torch_tn"

    def run(self, problem, items):
        from evaluator.api import Measurement, Timing
        out = []
        for g, b in items:
            lib = Path(b.library)
            assert lib.is_relative_to(self.cache_dir), lib
            t = 10.0 + lib.read_bytes()[-1] % 50
            out.append(Measurement(g.id, problem.name, "ok", device=Timing(t, t, t, 5), build_key=b.build_key))
        self.busy += 0.01 * len(items)
        return out, 0.01 * len(items)

    def evaluate(self, genomes, problem, builds=None, with_baselines=False, aa=False):
        ms, _ = self.run(problem, [(g, b) for g, b in zip(genomes, builds) if b.ok])
        return (ms, self.baselines(problem)) if with_baselines else ms

    def stats(self):
        return {"gpu_busy_seconds": self.busy}

    def close(self):
        pass


def compiler(nvcc: Path, cache: Path) -> Compiler:
    tools = Toolchain(nvcc=str(nvcc), nvcc_version="fake 1.0", include_dirs=(), cutlass_version="fake")
    return Compiler(cache_dir=cache, toolchain=tools)


def genomes(n: int, seed: int = 0) -> list[Genome]:
    rng = random.Random(seed)
    out: dict[str, Genome] = {}
    while len(out) < n:
        g = SPACE.sample(rng)
        if SPACE.is_valid(g, PROBLEM):
            out[g.id] = g
    return list(out.values())


def calls(nvcc: Path) -> list[str]:
    path = nvcc.with_suffix(".calls")
    return path.read_text().splitlines() if path.exists() else []


def test_without_ray_the_backend_names_the_extra(monkeypatch):
    from evaluator.factory import allowed_options, make_evaluator
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert "address" in allowed_options("ray") and "build_memory_gb" in allowed_options("ray")
    with pytest.raises(ImportError, match=r"pip install 'evogemm\[ray\]'"):
        make_evaluator("ray", runner="simulator")


def test_builds_spread_over_workers_and_ship_through_the_object_store(nvcc, tmp_path):
    from evaluator.ray_builder import RayBuilder
    driver = compiler(nvcc, tmp_path / "driver-cache")
    builder = RayBuilder(driver, build_memory_gb=0.2, worker_cache_dir=tmp_path / "worker-cache")
    batch = genomes(6)
    twin = batch[0].with_params(raster="along_m" if batch[0].get("raster") != "along_m" else "along_n")
    futures = [builder.submit(g) for g in [*batch, twin]]
    assert builder.pending() >= 1
    results = [f.result(timeout=120) for f in futures]
    assert [r.genome_id for r in results] == [g.id for g in [*batch, twin]]
    assert all(r.ok for r in results), [r.reason for r in results]
    assert results[-1].build_key == results[0].build_key            # same source: one task for both
    keys = {r.build_key for r in results}
    assert len(calls(nvcc)) == len(keys) == builder.stats.submitted
    assert len({line.split()[0] for line in calls(nvcc)}) == 2      # two worker processes built
    assert builder.to_dict()["build_workers"] == 2 and builder.to_dict()["builds_per_minute"] > 0
    for r in results:                                               # the driver's copy, from the object store
        lib = Path(r.library)
        assert lib.is_relative_to(tmp_path / "driver-cache") and lib.read_bytes().startswith(b"fake kernel ")
        worker_copy = tmp_path / "worker-cache" / r.build_key[:2] / r.build_key / "kernel.so"
        assert worker_copy.read_bytes() == lib.read_bytes()
    again = builder.submit(batch[1]).result(timeout=5)              # in the driver's cache now: no task
    assert again.ok and again.cached and builder.stats.submitted == len(keys)
    assert builder.pending() == 0


def _kill_the_build(nvcc: Path) -> int:
    pid_file = nvcc.with_suffix(".pid")
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the held build never started"
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    os.kill(pid, signal.SIGKILL)
    nvcc.with_suffix(".hold").unlink()
    return pid


def test_a_worker_killed_mid_build_is_retried(nvcc, tmp_path):
    from evaluator.ray_builder import RayBuilder
    builder = RayBuilder(compiler(nvcc, tmp_path / "cache"), build_memory_gb=0.2, max_retries=2)
    nvcc.with_suffix(".hold").write_text("")
    future = builder.submit(genomes(1, seed=5)[0])
    killed = _kill_the_build(nvcc)
    result = future.result(timeout=120)
    assert result.ok, result.reason
    assert Path(result.library).exists()
    lines = calls(nvcc)                      # the killed run may or may not have logged its start
    assert lines and int(lines[-1].split()[0]) != killed  # a new worker finished the build
    assert builder.stats.lost == 0


def test_a_build_lost_past_its_retries_is_a_clean_failure(nvcc, tmp_path):
    from evaluator.ray_builder import RayBuilder
    from evaluator.pipeline import build_failure
    builder = RayBuilder(compiler(nvcc, tmp_path / "cache"), build_memory_gb=0.2, max_retries=0)
    nvcc.with_suffix(".hold").write_text("")
    g = genomes(1, seed=6)[0]
    future = builder.submit(g)
    _kill_the_build(nvcc)
    result = future.result(timeout=120)
    assert not result.ok and result.lost
    assert result.reason.startswith("build lost: the Ray worker building it failed 1 time(s)")
    assert builder.stats.lost == 1 and builder.pending() == 0
    m = build_failure(g, PROBLEM, result)
    assert m.status == "compile_failed" and "build lost" in m.reason
    assert builder.submit(g).result(timeout=120).ok   # not cached: asked again, it builds
    builder.close()                                   # closed: asked again, it starts no task
    again = builder.submit(genomes(1, seed=7)[0]).result(timeout=10)
    assert not again.ok and again.lost and "closed" in again.reason and builder.stats.submitted == 2


class Silent:
    def update(self, rows, simulated=None, evaluator=None):
        pass


def _campaign(tmp_path: Path, name: str, evaluator: dict) -> Path:
    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign

    config = parse_campaign(small_config(shapes=["1024x1024x1024", "128x4096x4096"],
                                         budget={"evaluations_per_shape": 10}, evaluator=evaluator),
                            base_dir=tmp_path)
    folder = tmp_path / name
    create_campaign(config, folder)
    run_campaign(folder, progress=Silent())
    return folder


def test_a_campaign_on_ray_ends_like_the_single_machine_one_despite_a_killed_worker(nvcc, tmp_path):
    single = _campaign(tmp_path, "single", {"backend": "simulator", "noise": 0.05})
    nvcc.with_suffix(".hold").write_text("")       # the first build of the Ray campaign is killed
    killer = threading.Thread(target=_kill_the_build, args=(nvcc,), daemon=True)
    killer.start()
    spread = _campaign(tmp_path, "ray", {"backend": "ray", "noise": 0.05, "options": {
        "runner": "simulator", "cache_dir": str(tmp_path / "kernels"), "build_memory_gb": 0.2, "max_retries": 2}})
    killer.join(timeout=5)
    assert nvcc.with_suffix(".pid").exists(), "no build was killed"
    a, b = fingerprint(single), fingerprint(spread)
    assert a["counters"]["evaluations"] == 20
    assert a == b
    runs = calls(nvcc)
    assert len({line.split()[0] for line in runs}) >= 2           # builds ran on more than one worker
    assert any(row[2] == "ok" for row in b["evaluated"])
    conn = sqlite3.connect(str(spread / "campaign.db"))
    try:
        (backend,) = conn.execute("SELECT value FROM meta WHERE key='resolved_backend'").fetchone()
        built = conn.execute("SELECT COUNT(*) FROM evaluations WHERE status='ok' AND build_key IS NULL").fetchone()
    finally:
        conn.close()
    assert json.loads(backend) == "ray" and built == (0,)           # every timed kernel was built on Ray


def test_gpu_actors_time_kernels_shipped_into_their_own_cache(nvcc, tmp_path):
    from evaluator.ray_evaluator import RayEvaluator
    ev = RayEvaluator(runner="gpu", compiler=compiler(nvcc, tmp_path / "driver"), worker_cache_dir=tmp_path / "worker",
                      gpu_cache_dir=tmp_path / "gpu", gpu_class=FakeGpu, build_memory_gb=0.2)
    try:
        assert not ev.simulated and len(ev.actors) == 1 and "fake GPU 0" in ev.describe()
        batch = genomes(4, seed=9)
        assert ev.set_reference(PROBLEM, ev.baselines(PROBLEM)) == "torch_tn"
        ev.prefetch(batch[2:], PROBLEM)
        ms = ev.evaluate(batch, PROBLEM)
        assert [m.genome_id for m in ms] == [g.id for g in batch] and all(m.ok for m in ms)
        for m in ms:
            assert (tmp_path / "gpu" / m.build_key[:2] / m.build_key / "kernel.so").exists()
        again, baselines = ev.evaluate(batch[:2], PROBLEM, with_baselines=True)
        assert [m.device.median_us for m in again] == [m.device.median_us for m in ms[:2]]
        assert "torch_tn" in baselines.device
        stats = ev.stats(fresh=True)
        assert stats["gpu_actors"] == 1 and stats["actor_busy_seconds"] == pytest.approx(0.06)
        assert stats["gpu_busy_seconds"] >= stats["gpu_seconds_during_builds"] >= 0
        assert 0 < stats["gpu_busy_fraction"] <= 1 and stats["kernels_timed"] == 4
        assert stats["builds"] == 4 and stats["builds_per_minute"] > 0 and stats["build_queue_depth"] == 0
    finally:
        ev.close()


@pytest.mark.nvcc
def test_real_nvcc_builds_run_on_ray_workers_during_a_campaign(ray_local, tmp_path, monkeypatch):
    """Real nvcc through the Ray backend: a campaign (simulator timing) of two kernels of the cheapest
    family to build (skinny_mma: no CUTLASS headers). Both are built by Ray workers, none by the
    driver, and reach the driver's content-keyed cache through the object store."""
    import shutil
    from evaluator.compile import BUILD_GB
    from evaluator.ray_evaluator import RayEvaluator
    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign
    ray = pytest.importorskip("ray")
    assert ray.cluster_resources().get("memory", 0) >= BUILD_GB * 1024 ** 3, "Ray gives no room for one build"

    in_driver: list[str] = []
    nvcc_in_driver = Compiler._nvcc
    monkeypatch.setattr(Compiler, "_nvcc", lambda self, kernel, key: in_driver.append(key) or nvcc_in_driver(
        self, kernel, key))                                           # the driver only: workers import afresh
    real = Toolchain.discover(shutil.which("nvcc"))
    ev = RayEvaluator(runner="simulator", compiler=Compiler(cache_dir=tmp_path / "kernels", toolchain=real),
                      worker_cache_dir=tmp_path / "worker-kernels")
    data = small_config(shapes=["16x4096x4096"], families=["skinny_mma"], budget={"evaluations_per_shape": 2},
                        population={"size": 2, "islands": 1, "offspring": 1, "elite": 1,
                                    "migration_size": 1, "seed_fraction": 1.0},
                        operators=[{"name": "param_mutate"}],
                        evaluator={"backend": "ray", "options": {"runner": "simulator"}})
    folder = tmp_path / "c"
    create_campaign(parse_campaign(data, base_dir=tmp_path), folder)
    try:
        run_campaign(folder, evaluator=ev, progress=Silent(), plots=False)
        stats = ev.stats()
    finally:
        ev.close()
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        rows = conn.execute("SELECT status, build_key FROM evaluations").fetchall()
        done = conn.execute("SELECT COUNT(*) FROM events WHERE kind='campaign_done'").fetchone()[0]
    finally:
        conn.close()
    assert done == 1 and len(rows) == 2 and all(status == "ok" for status, _ in rows), rows
    keys = {key for _, key in rows}
    assert len(keys) == 2 and None not in keys
    assert in_driver == [] and stats["builds"] == stats["builds_submitted"] == 2 and stats["builds_lost"] == 0
    pids = [int(where.rsplit(":", 1)[1]) for where in stats["builds_by_worker"]]
    assert sum(stats["builds_by_worker"].values()) == 2 and os.getpid() not in pids
    assert stats["builds_per_minute"] > 0
    for key in keys:                                                  # real kernels, in both caches, same bytes
        lib = tmp_path / "kernels" / key[:2] / key / "kernel.so"
        assert lib.read_bytes()[:4] == b"\x7fELF"
        assert lib.read_bytes() == (tmp_path / "worker-kernels" / key[:2] / key / "kernel.so").read_bytes()
        assert json.loads((lib.parent / "meta.json").read_text())["ok"] is True
