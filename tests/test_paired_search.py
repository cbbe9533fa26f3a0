"""A fitness that sees 2%: search measurements paired with a reference baseline timed in the same
rounds, and a confirming measurement before a genome enters the hall of fame."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from engine_helpers import FakeEvaluator, small_config
from evaluator.api import STATUS_OK, BaselineSet, Measurement, Timing
from evaluator.compile import BuildResult
from evaluator.gpu import GpuEvaluator
from evaluator.worker_pool import MeasureResult
from experiments.campaign import create_campaign, run_campaign
from experiments.schema import parse_campaign
from genome import Problem
from templates import family_registry


class StubPool:
    """Answers a measure request like the GPU worker: the clock drifts from replay to replay (a
    factor per replay), so only samples taken back to back see the same clock. With a reference,
    every other candidate is timed right after a replay of the reference, as the worker does."""

    def __init__(self, kernel_us: dict, baseline_us: dict, rounds: int = 5):
        self.kernel_us, self.baseline_us, self.rounds = kernel_us, baseline_us, rounds
        self.requests = []
        self.configs = []

    @staticmethod
    def _summary(samples):
        s = sorted(samples)
        return {"median_us": s[len(s) // 2], "min_us": s[0], "max_us": s[-1], "repeats": len(s),
                "samples_us": list(samples)}

    def measure(self, problem, kernels, baselines, modes, config, seed, reference=None):
        self.requests.append((list(k["id"] for k in kernels), list(baselines), reference))
        self.configs.append(dict(config or {}))
        base = {**{k["id"]: self.kernel_us[k["id"]] for k in kernels}, **{b: self.baseline_us[b] for b in baselines}}
        samples = {c: [] for c in base}
        refs = {c: [] for c in base}
        replay = 0
        for _ in range(self.rounds):
            for c in [c for c in base if c != reference]:
                clock = 1.0 + 0.3 * ((replay * 7919) % 13) / 13.0   # jumps around from replay to replay
                if reference is not None:
                    samples[reference].append(base[reference] * clock)
                    refs[c].append(base[reference] * clock)
                samples[c].append(base[c] * clock)
                replay += 1
        out = {}
        for c in base:
            t = self._summary(samples[c])
            if refs[c]:
                t["ref_samples_us"] = refs[c]
            out[c] = {"status": STATUS_OK, "device": t, "rel_error": 2e-4}
        return MeasureResult(kernels={k["id"]: out[k["id"]] for k in kernels},
                             baselines={b: out[b] for b in baselines}, failures={}, info={}, gpu_seconds=0.01,
                             restarts=0)

    def close(self):
        pass


def test_search_measurements_are_paired_with_the_shapes_reference(tmp_path):
    fam = family_registry().resolve("sm90_cutlass")
    genomes = [g for _, g in fam.seeds()[:2]]
    problem = Problem(2048, 2048, 2048)
    ev = GpuEvaluator(cache_dir=tmp_path)
    ev.pool = StubPool({genomes[0].id: 40.0, genomes[1].id: 50.0},
                       {"cublaslt_heuristic": 44.0, "torch_tn": 45.0})
    start = BaselineSet(problem.name, device={"cublaslt_heuristic": Timing(44.0, 43.0, 46.0, 5),
                                              "torch_tn": Timing(45.0, 44.0, 47.0, 5),
                                              "cublaslt_autotuned": Timing(42.0, 41.0, 43.0, 5)})
    assert ev.set_reference(problem, start) == "cublaslt_heuristic"   # autotuned ones are not paired with
    items = [(g, BuildResult(g.id, "key", True, library="/x.so")) for g in genomes]
    ms, _, _ = ev._measure(problem, items, with_baselines=False)
    assert ev.pool.requests[-1] == ([g.id for g in genomes], ["cublaslt_heuristic"], "cublaslt_heuristic")
    a, b = ms
    # each kernel replay came right after a reference replay, under the same clock: the paired ratio
    # is exact although the clock jumped between replays (the raw medians are not)
    assert all(math.isclose(a.paired[k], 44.0 / 40.0) for k in ("median", "low", "high"))
    assert math.isclose(a.time_us, 40.0) and math.isclose(b.time_us, 50.0)
    assert not math.isclose(a.raw_time_us, 40.0) and a.paired["reference"] == "cublaslt_heuristic"
    # a measurement keeps its pairing through the database and JSON
    assert Measurement.from_dict(a.to_dict()).time_us == a.time_us
    # pairing off: no reference is timed, times are raw
    off = GpuEvaluator(cache_dir=tmp_path, paired=False)
    off.pool = StubPool({genomes[0].id: 40.0}, {})
    assert off.set_reference(problem, start) is None
    (m,), _, _ = off._measure(problem, items[:1], with_baselines=False)
    assert m.paired is None and m.time_us == m.raw_time_us and off.pool.requests[-1][1:] == ([], None)


def test_paired_ratios_through_an_alternation_reference():
    from evaluator.api import Timing
    from evaluator.paired import paired_ratio
    clocks = [1.0, 1.3, 0.9]
    ref = Timing(10.0, 9.0, 13.0, 6, samples_us=[10 * c for c in clocks] * 2)          # the reference itself
    k = Timing(5.0, 4.5, 6.5, 3, samples_us=[5 * c for c in clocks], ref_samples_us=[10 * c for c in clocks])
    v = Timing(8.0, 7.2, 10.4, 3, samples_us=[8 * c for c in clocks[::-1]],
               ref_samples_us=[10 * c for c in clocks[::-1]])
    assert math.isclose(paired_ratio(ref, k).median, 2.0) and paired_ratio(ref, k).spread < 1e-12
    assert math.isclose(paired_ratio(k, ref).median, 0.5)
    # two candidates that each alternated with the reference, in other rounds' clocks: still exact
    assert math.isclose(paired_ratio(v, k).median, 1.6) and paired_ratio(v, k).spread < 1e-12
    # without alternation, rounds pair up as before
    a = Timing(2.0, 2.0, 2.0, 2, samples_us=[2.0, 2.2])
    b = Timing(1.0, 1.0, 1.1, 2, samples_us=[1.0, 1.1])
    assert math.isclose(paired_ratio(a, b).median, 2.0)


def test_a_reference_on_both_sides_cancels_a_steady_drift():
    from evaluator.api import Timing
    from evaluator.paired import paired_ratio
    # the clock slows faster and faster (log time quadratic in the replay); a round is R k R t R:
    # with the reference before and after each sample, an A/A pair (k against its twin t) is exact;
    # with the one before alone each pair is off by that replay's drift, which differs pair to pair
    drift = [1.002 ** (i * i) for i in range(5 * 3)]
    ref = [10.0 * drift[i] for i in range(0, 15, 2)]
    k = Timing(5.0, 5.0, 5.0, 3, samples_us=[5.0 * drift[1], 5.0 * drift[7], 5.0 * drift[13]])
    t = Timing(5.0, 5.0, 5.0, 3, samples_us=[5.0 * drift[3], 5.0 * drift[5], 5.0 * drift[11]])
    both_k = Timing(**{**k.to_dict(), "ref_samples_us": [ref[0], ref[3], ref[6]], "ref_after_us": [ref[1], ref[4], ref[7]]})
    both_t = Timing(**{**t.to_dict(), "ref_samples_us": [ref[1], ref[2], ref[5]], "ref_after_us": [ref[2], ref[3], ref[6]]})
    aa = paired_ratio(both_k, both_t)
    assert math.isclose(aa.median, 1.0) and aa.spread < 1e-12
    before_k = Timing(**{**k.to_dict(), "ref_samples_us": both_k.ref_samples_us})
    before_t = Timing(**{**t.to_dict(), "ref_samples_us": both_t.ref_samples_us})
    assert paired_ratio(before_k, before_t).spread > 0.01


def test_the_median_interval_is_the_binomial_order_statistic_interval():
    from evaluator.paired import median_interval, paired_ratio

    def coverage(n, k):
        return 1.0 - 2.0 * sum(math.comb(n, j) for j in range(k)) / 2.0 ** n
    for n in range(1, 60):
        xs = [float(i) for i in range(n, 0, -1)]          # n distinct values, unsorted
        lo, hi = median_interval(xs)
        k = int(lo)                                       # x(k) = k for these samples
        assert hi == n + 1 - k
        assert k == 1 or coverage(n, k) >= 0.95           # it covers the median at 95%
        assert k + 1 > (n + 1) // 2 or coverage(n, k + 1) < 0.95 or k == 1 and coverage(n, 1) < 0.95
        if n >= 9:
            assert coverage(n, k) >= 0.95 and coverage(n, k + 1) < 0.95   # and it is the narrowest that does
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (1.0, 5.0)    # 5 rounds: the range (94%)
    assert median_interval([float(i) for i in range(1, 22)]) == (6.0, 16.0)
    with pytest.raises(ValueError):
        median_interval([])
    # a paired figure carries it; more rounds of the same noise narrow it, the range widens
    import random
    rng = random.Random(7)
    noise = [1.0 + rng.gauss(0.0, 0.01) for _ in range(21)]
    a = Timing(1.0, 1.0, 1.0, 21, samples_us=noise)
    b = Timing(1.0, 1.0, 1.0, 21, samples_us=[1.0] * 21)
    few = paired_ratio(Timing(1.0, 1.0, 1.0, 5, samples_us=noise[:5]), Timing(1.0, 1.0, 1.0, 5, samples_us=[1.0] * 5))
    many = paired_ratio(a, b)
    assert (few.ci_low, few.ci_high) == (few.low, few.high)
    assert many.ci_spread < many.spread and many.low <= many.ci_low <= many.median <= many.ci_high <= many.high


def test_a_reference_that_something_other_than_the_clock_moved_does_not_pair():
    """The H200 case: torch_tn took 221 us through a worker run (101 us when the shape started), a
    109 us kernel paired with it read as 50 us. The effective time falls back to the run's own
    reference samples, or to the kernel's raw median, and says so."""
    from evaluator.paired import paired_figure
    t = lambda xs, refs=None: Timing(sorted(xs)[len(xs) // 2], min(xs), max(xs), len(xs), samples_us=xs,
                                     ref_samples_us=refs)
    kernel = [110.1, 108.5, 108.4, 110.3, 108.9]
    # the clock: reference and kernel move together, the pairs cancel it
    fig = paired_figure("torch_tn", 100.8, t([106.0, 104.0, 112.0, 106.5, 105.0]),
                        t([k * 1.1 for k in kernel], [106.0 * 1.1, 104.0 * 1.1, 112.0 * 1.1, 106.5 * 1.1, 105.0 * 1.1]))
    assert fig["pairing"] == "adjacent" and math.isclose(fig["effective_us"], 100.8 / fig["median"])
    assert 100 < fig["effective_us"] < 106
    # the samples right before the kernel's are twice the reference's own: pair round by round instead
    fig = paired_figure("torch_tn", 100.8, t([106.0, 104.0, 112.0, 106.5, 105.0]),
                        t(kernel, [222.2, 226.8, 220.7, 221.0, 220.3]))
    assert fig["pairing"] == "run" and math.isclose(fig["adjacent_us"], 221.0)
    assert 95 < fig["effective_us"] < 105
    # the reference is twice its start through the whole run: no pairing, the kernel's own median
    fig = paired_figure("torch_tn", 100.8, t([222.2, 226.8, 220.7, 221.0, 220.3]),
                        t(kernel, [222.2, 226.8, 220.7, 221.0, 220.3]))
    assert fig["pairing"] == "raw" and fig["effective_us"] == 108.9
    m = Measurement("k", "5120x1280x5120", STATUS_OK, device=t(kernel), paired=fig)
    assert m.time_us == 108.9


class NoisyGpu(FakeEvaluator):
    """A fake that behaves like a GPU evaluator: not simulated, and every call is a new noisy draw."""

    simulated = False

    def __init__(self, **kw):
        super().__init__(**kw)
        self.draw = 0

    def evaluate(self, genomes, problem):
        out = super().evaluate(genomes, problem)
        for m in out:
            if m.ok:
                self.draw += 1
                wobble = 1.0 + 0.05 * math.sin(self.draw * 1.7)
                t = m.device.median_us * wobble
                m.device = Timing(t, t * 0.99, t * 1.01, 5)
                m.simulated = False
        return out


def _run(folder, data, ev, mode="run"):
    config = parse_campaign(data, base_dir=folder.parent)
    if not (folder / "campaign.db").exists():
        create_campaign(config, folder)

    class Silent:
        def update(self, rows, simulated=None, evaluator=None):
            pass
    return run_campaign(folder, evaluator=ev, progress=Silent(), mode=mode)


def test_the_hall_of_fame_holds_confirmed_measurements_and_a_resume_replays_them(tmp_path):
    data = small_config(shapes=["1024x1024x1024"], budget={"evaluations_per_shape": 40})
    ev = NoisyGpu(seed=1)
    result = _run(tmp_path / "c", data, ev)
    state = result.states["1024x1024x1024"]
    conn = sqlite3.connect(str(tmp_path / "c" / "campaign.db"))
    confirmed = {gid for (gid,) in conn.execute("SELECT genome_id FROM confirmations")}
    search = {gid: us for gid, us in conn.execute("SELECT genome_id, device_us FROM evaluations WHERE status='ok'")}
    conn.close()
    assert len(state.hof) and {ind.id for ind in state.hof} <= confirmed
    # the hall holds the confirming draw, not the search's
    assert any(not math.isclose(ind.time_us, search[ind.id]) for ind in state.hof)
    n_calls = len(ev.calls)
    assert n_calls == 40 + len(confirmed)
    # resuming the finished campaign replays every measurement and confirmation: no new call
    replay = NoisyGpu(seed=1)
    result2 = _run(tmp_path / "c", data, replay, mode="resume")
    assert replay.calls == []
    hof2 = result2.states["1024x1024x1024"].hof
    assert [(i.id, i.time_us) for i in hof2] == [(i.id, i.time_us) for i in state.hof]


class UnsteadyFirstConfirmation(NoisyGpu):
    """Every genome's first confirmation (its second measurement) comes back with an unsteady
    reference and a time half its own; the retry with `second` ("adjacent": steady)."""

    def __init__(self, second: str, **kw):
        super().__init__(**kw)
        self.second, self.seen = second, {}

    def evaluate(self, genomes, problem):
        out = super().evaluate(genomes, problem)
        for g, m in zip(genomes, out):
            n = self.seen[g.id] = self.seen.get(g.id, 0) + 1
            if m.ok and n == 2:
                m.paired = {"pairing": "run", "effective_us": 0.5 * m.device.median_us}
            elif m.ok and n == 3:
                m.paired = {"pairing": self.second, "effective_us": 0.8 * m.device.median_us}
        return out


def test_a_confirmation_with_an_unsteady_reference_is_measured_again(tmp_path):
    for second in ("adjacent", "raw"):
        data = small_config(shapes=["1024x1024x1024"], budget={"evaluations_per_shape": 30})
        ev = UnsteadyFirstConfirmation(second, seed=1)
        result = _run(tmp_path / second, data, ev)
        hof = result.states["1024x1024x1024"].hof
        conn = sqlite3.connect(str(tmp_path / second / "campaign.db"))
        stored = {gid: Measurement.from_dict(json.loads(js))
                  for gid, js in conn.execute("SELECT genome_id, json FROM confirmations")}
        conn.close()
        assert len(hof) and all(ev.seen[ind.id] == 3 for ind in hof)       # search, confirmation, retry
        for ind in hof:
            assert stored[ind.id].time_us == pytest.approx(ind.time_us)      # the one that stood is stored
            if second == "adjacent":
                assert stored[ind.id].paired["pairing"] == "adjacent"       # the steady retry stands
            else:   # both unsteady: the slower of 0.5 x draw 2 and 0.8 x draw 3 (draws differ by < 11%)
                assert stored[ind.id].paired["pairing"] == "raw"
        log = (tmp_path / second / "campaign.log").read_text()
        assert "measured twice, the reference unsteady the first time" in log
        # a resume replays the stored confirmations: no new measurement
        replay = UnsteadyFirstConfirmation(second, seed=1)
        _run(tmp_path / second, data, replay, mode="resume")
        assert replay.calls == []


def test_focused_pair_times_the_best_kernel_its_twin_and_the_vendor_alone(tmp_path):
    from evaluator.gpu import AA_SUFFIX
    from experiments.bench_report import ShapeResult
    fam = family_registry().resolve("sm90_cutlass")
    g = fam.seeds()[0][1]
    problem = Problem(8192, 8192, 8192)
    ev = GpuEvaluator(cache_dir=tmp_path)
    ev.pool = StubPool({g.id: 1500.0, g.id + AA_SUFFIX: 1500.0}, {"cublaslt_autotuned": 1650.0})
    out = ev.focused_pair(problem, g, BuildResult(g.id, "key", True, library="/x.so"), "cublaslt_autotuned")
    assert ev.pool.requests[-1] == ([g.id, g.id + AA_SUFFIX], ["cublaslt_autotuned"], "cublaslt_autotuned")
    assert ev.pool.configs[-1]["repeats"] == 21       # focused_repeats: more rounds, three graphs alone
    ev.timing = {"repeats": 30}
    assert ev.focused_timing()["repeats"] == 30       # never fewer than the bench's own rounds
    ev.timing = {"repeats": 5, "focused_repeats": 9}
    assert ev.focused_timing() == {"repeats": 9, "focused_repeats": 9}
    assert math.isclose(out["paired"]["median"], 1650.0 / 1500.0)
    assert math.isclose(out["paired"]["low"], out["paired"]["high"])
    assert math.isclose(out["aa"]["median"], 1.0) and math.isclose(out["aa"]["high"], out["aa"]["low"])
    assert len(out["samples"]["twin"]["samples_us"]) == 5 and out["samples"]["vendor"]["median_us"] > 1600
    # the report quotes the focused figures over those of the run of every candidate
    result = ShapeResult(problem, BaselineSet(problem.name, aa={"kernel": "x", "median": 0.9, "low": 0.8,
                                                                "high": 1.0, "rounds": 5}), focused=out)
    assert math.isclose(result.paired().median, 1650.0 / 1500.0) and result.aa()["median"] == out["aa"]["median"]
