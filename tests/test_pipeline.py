"""The Builder/Runner split: builds run while the runner (the GPU) times what is built, and a
prefetch started while another round is timed makes the next round's builds ready early."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from evaluator.api import STATUS_OK, Measurement, Timing
from evaluator.compile import BuildResult
from evaluator.pipeline import BuildRunPipeline
from genome import Problem
from templates import get_space

SPACE = get_space("sm90_cutlass")
PROBLEM = Problem(1024, 1024, 1024)
BUILD_S = 0.3
RUN_S = 0.05


class SlowBuilder:
    """Two parallel 'nvcc' slots; every build takes BUILD_S; failures for chosen ids."""

    def __init__(self, fail: "set[str] | None" = None, lose: "dict[str, int] | None" = None):
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.fail = fail or set()
        self.lose = dict(lose or {})   # genome id -> how many of its builds the 'machine' loses
        self.finished: dict[str, float] = {}
        self.submitted: list[str] = []
        self.futures: list = []
        self.lock = threading.Lock()

    def _build(self, genome) -> BuildResult:
        time.sleep(BUILD_S)
        with self.lock:
            self.finished[genome.id] = time.monotonic()
        with self.lock:
            if self.lose.get(genome.id, 0) > 0:
                self.lose[genome.id] -= 1
                return BuildResult(genome.id, "key-" + genome.id, ok=False, lost=True,
                                   reason="build lost: the Ray worker building it failed 1 time(s)")
        ok = genome.id not in self.fail
        return BuildResult(genome.id, "key-" + genome.id, ok=ok, library="/fake.so" if ok else None,
                           seconds=BUILD_S, reason=None if ok else "compile error: planted")

    def submit(self, genome) -> "Future[BuildResult]":
        self.submitted.append(genome.id)
        future = self.pool.submit(self._build, genome)
        self.futures.append(future)
        return future

    def pending(self) -> int:
        return sum(1 for f in self.futures if not f.done())


class SlowRunner:
    def __init__(self):
        self.calls: list[tuple[float, list[str]]] = []

    def run(self, problem, items):
        start = time.monotonic()
        self.calls.append((start, [g.id for g, _ in items]))
        time.sleep(RUN_S * len(items))
        ms = [Measurement(g.id, problem.name, STATUS_OK, device=Timing(10.0, None, None, 5)) for g, _ in items]
        return ms, time.monotonic() - start


def genomes(n: int, seed: int = 0):
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        g = SPACE.sample(rng)
        if g.id not in seen and SPACE.is_valid(g, PROBLEM):
            seen.add(g.id)
            out.append(g)
    return out


def check(genome, problem):
    return None


def test_runner_times_early_builds_while_later_ones_compile():
    builder, runner = SlowBuilder(), SlowRunner()
    pipe = BuildRunPipeline(builder, runner, check)
    batch = genomes(6)
    ms = pipe.evaluate(batch, PROBLEM)
    assert [m.genome_id for m in ms] == [g.id for g in batch] and all(m.ok for m in ms)
    first_run = runner.calls[0][0]
    last_build = max(builder.finished.values())
    assert first_run < last_build - BUILD_S / 2, "the runner waited for every build before timing"
    assert len(runner.calls) >= 2
    assert pipe.stats.kernels_timed == 6 and pipe.stats.gpu_busy_seconds >= 6 * RUN_S * 0.9
    assert 0 < pipe.stats.gpu_seconds_during_builds < pipe.stats.gpu_busy_seconds


def test_failed_builds_become_measurements_and_are_not_run():
    batch = genomes(3, seed=1)
    builder, runner = SlowBuilder(fail={batch[1].id}), SlowRunner()
    ms = BuildRunPipeline(builder, runner, check).evaluate(batch, PROBLEM)
    assert ms[1].status == "compile_failed" and "planted" in ms[1].reason
    assert batch[1].id not in [gid for _, ids in runner.calls for gid in ids]
    assert ms[0].ok and ms[2].ok


def test_a_lost_build_is_asked_for_once_more_before_it_is_recorded():
    batch = genomes(3, seed=7)
    builder, runner = SlowBuilder(lose={batch[0].id: 1, batch[2].id: 2}), SlowRunner()
    ms = BuildRunPipeline(builder, runner, check).evaluate(batch, PROBLEM)
    # lost once: built on the second ask and timed, as if nothing had happened
    assert ms[0].ok and builder.submitted.count(batch[0].id) == 2
    assert batch[0].id in [gid for _, ids in runner.calls for gid in ids]
    # an ordinary build is asked for once
    assert ms[1].ok and builder.submitted.count(batch[1].id) == 1
    # lost twice: recorded as the build's failure, with the reason, and asked for no third time
    assert ms[2].status == "compile_failed" and "build lost" in ms[2].reason
    assert builder.submitted.count(batch[2].id) == 2


def test_the_ray_evaluators_own_builds_ask_for_a_lost_build_once_more():
    """RayEvaluator.build (evaluate with baselines, or with builds given) treats a lost build as the pipeline does."""
    from evaluator.ray_evaluator import RayEvaluator
    batch = genomes(3, seed=8)
    ev = object.__new__(RayEvaluator)        # only its builder is used: no Ray, no GPU actors
    ev.builder = SlowBuilder(lose={batch[0].id: 1, batch[2].id: 2})
    seen = []
    results = ev.build(batch, progress=lambda i, n, r: seen.append((i, n, r.ok)))
    assert [r.genome_id for r in results] == [g.id for g in batch]
    assert results[0].ok and ev.builder.submitted.count(batch[0].id) == 2
    assert results[1].ok and ev.builder.submitted.count(batch[1].id) == 1
    assert not results[2].ok and results[2].lost and ev.builder.submitted.count(batch[2].id) == 2
    assert seen == [(1, 3, True), (2, 3, True), (3, 3, False)]


def test_prefetch_overlaps_the_next_rounds_builds_with_this_rounds_timing():
    builder, runner = SlowBuilder(), SlowRunner()
    pipe = BuildRunPipeline(builder, runner, check)
    first, second = genomes(2, seed=2), genomes(4, seed=3)
    pipe.evaluate(first, PROBLEM)
    pipe.prefetch(second, PROBLEM)
    time.sleep(2 * BUILD_S + 0.1)          # the GPU is busy with something else meanwhile
    t0 = time.monotonic()
    ms = pipe.evaluate(second, PROBLEM)
    took = time.monotonic() - t0
    assert all(m.ok for m in ms)
    assert took < BUILD_S, f"prefetched builds were not ready ({took:.2f} s)"
    assert builder.submitted.count(second[0].id) == 1   # evaluate reused the prefetched build


def test_invalid_genomes_are_refused_before_a_build():
    builder, runner = SlowBuilder(), SlowRunner()
    batch = genomes(2, seed=4)
    pipe = BuildRunPipeline(builder, runner, lambda g, p: "too big" if g.id == batch[0].id else None)
    ms = pipe.evaluate(batch, PROBLEM)
    assert ms[0].status == "invalid" and ms[0].reason == "too big"
    assert batch[0].id not in builder.submitted


def test_engine_prefetches_the_next_round_and_records_gpu_utilisation(tmp_path):
    import json
    import sqlite3

    from engine_helpers import FakeEvaluator, small_config
    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign

    class Recording(FakeEvaluator):
        simulated = False  # a "GPU" evaluator: the engine reports its utilisation

        def __init__(self, **kw):
            super().__init__(**kw)
            self.prefetched: list[str] = []
            self.busy = 0.0

        def prefetch(self, genomes, problem=None):
            self.prefetched += [(g.id, len(self.calls)) for g in genomes]  # with how many were evaluated by then
            return len(genomes)

        def evaluate(self, genomes, problem):
            self.busy += 0.01 * len(genomes)
            return super().evaluate(genomes, problem)

        def stats(self):
            return {"gpu_busy_seconds": self.busy, "gpu_seconds_during_builds": self.busy / 2, "builds": 3,
                    "build_seconds": 1.5}

    class Silent:
        def update(self, rows, simulated=None, evaluator=None):
            pass

    config = parse_campaign(small_config(shapes=["1024x1024x1024"], budget={"evaluations_per_shape": 30}),
                            base_dir=tmp_path)
    folder = tmp_path / "c"
    create_campaign(config, folder)
    ev = Recording(seed=7, delay=0.02)   # each evaluation takes a while, like the GPU
    run_campaign(folder, evaluator=ev, progress=Silent())
    evaluated = [gid for gid, _ in ev.calls]
    assert ev.prefetched, "the engine never prefetched"
    first = {gid: at for gid, at in reversed(ev.prefetched)}
    assert set(first) == set(evaluated)                            # everything measured was built first
    assert all(first[gid] <= evaluated.index(gid) for gid in evaluated)
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        round_of = dict(conn.execute("SELECT genome_id, round FROM proposals").fetchall())
    finally:
        conn.close()
    start = {}
    for i, gid in enumerate(evaluated):
        start.setdefault(round_of[gid], i)
    ahead = [gid for gid in evaluated if first[gid] < start[round_of[gid]]]
    assert {round_of[g] for g in ahead} >= {2, 3}, "later rounds were not built while the round before was timed"
    conn = sqlite3.connect(str(folder / "campaign.db"))
    try:
        (raw,) = conn.execute("SELECT value FROM meta WHERE key='utilisation'").fetchone()
    finally:
        conn.close()
    util = json.loads(raw)
    assert 0 < util["gpu_busy_fraction"] <= 1 and util["builds"] == 3
    log = (folder / "campaign.log").read_text()
    assert "GPU busy" in log and "while nvcc builds ran" in log


def test_status_and_report_quote_the_gpu_utilisation():
    from experiments.report import utilisation_text
    text = utilisation_text({"gpu_busy_fraction": 0.19, "wall_seconds": 103.2, "gpu_busy_seconds": 19.6,
                             "gpu_seconds_during_builds": 15.6, "builds": 20, "build_seconds": 900.0})
    assert text.startswith("GPU busy 19% of 103 s wall") and "15.6 s of it while nvcc builds ran" in text
    assert utilisation_text(None) is None


def test_aa_figure_pairs_a_kernel_with_its_twin():
    from evaluator.gpu import AA_SUFFIX, aa_figure
    from evaluator.worker_pool import MeasureResult
    dev = lambda xs: {"median_us": sorted(xs)[1], "min_us": min(xs), "max_us": max(xs), "repeats": 3,  # noqa: E731
                      "samples_us": xs}
    result = MeasureResult(kernels={"k": {"device": dev([10.0, 12.0, 11.0])},
                                    "k" + AA_SUFFIX: {"device": dev([10.1, 11.9, 11.0])}},
                           baselines={}, failures={}, info={}, gpu_seconds=1.0, restarts=0)
    aa = aa_figure("k", result)
    assert aa["kernel"] == "k" and aa["rounds"] == 3
    assert 0.99 < aa["low"] <= aa["median"] <= aa["high"] < 1.01
    missing = aa_figure("k", MeasureResult(kernels={"k": {"device": dev([1.0, 1.0, 1.0])}}, baselines={},
                                           failures={}, info={}, gpu_seconds=0.0, restarts=0))
    assert "not timed" in missing["reason"]
