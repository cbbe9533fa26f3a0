"""CPU unit tests of the GPU worker's pure pieces: timing options and arithmetic, the gate's small
rules, the protocol loop, and the life cycle of cuBLASLt objects (against a fake libcublasLt
that records every create and destroy). The GPU paths themselves are in test_gpu.py."""

from __future__ import annotations

import ctypes
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluator import cublaslt, gpu_worker
from evaluator.timing_options import PROTOCOL_MINIMUMS, TIMING_DEFAULTS, check_timing, timing_config
from evaluator.timing_stats import (MAX_ROTATION_BYTES, MAX_ROTATION_SETS, autotune_launches, last_set_index,
                                    launches_per_replay, rotation_multiple, rotation_set_count, summary,
                                    upper_median)
from evaluator.worker_baselines import add_baselines, cublaslt_formulation, is_autotuned
from evaluator.worker_candidates import Candidate, release_candidates
from evaluator.worker_cuda import KernelFault
from evaluator.worker_gate import gate_failure_status, merged_rel_error
from evaluator.worker_inputs import Problem

REPO = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------------------------
# timing options
# ------------------------------------------------------------------------------------------------

def test_check_timing_accepts_defaults_and_reports_low_values():
    assert check_timing(None) == []
    assert check_timing(dict(TIMING_DEFAULTS)) == []
    below = check_timing({"repeats": 3, "seeds": 4, "warmup_s": 0.2})
    assert below == ["repeats=3 < 5", "warmup_s=0.2 < 1.0"]  # more seeds: a stricter gate
    assert set(PROTOCOL_MINIMUMS) <= set(TIMING_DEFAULTS)


@pytest.mark.parametrize("options, key", [({"seeds": 2}, "seeds"), ({"tolerance": 0.5}, "tolerance"),
                                          ({"tolerance": 1.0000001e-3}, "tolerance")])
def test_the_gate_cannot_be_loosened_by_timing_options(options, key):
    from evaluator.timing_options import gate_violation
    assert gate_violation(options)[0] == key
    with pytest.raises(ValueError, match="correctness gate cannot be loosened"):
        check_timing(options)
    assert gate_violation({"tolerance": 5e-4, "seeds": 5}) is None   # stricter is fine


@pytest.mark.parametrize("options, message", [
    ({"repeat": 3}, "unknown timing option"),
    ({"repeats": True}, "non-negative number"),
    ({"repeats": -1}, "non-negative number"),
    ({"warmup_s": "1"}, "non-negative number"),
    ({"tolerance": None}, "non-negative number"),
])
def test_check_timing_refuses_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        check_timing(options)


def test_check_timing_is_importable_from_gpu_worker():
    from evaluator.gpu_worker import check_timing as imported
    assert imported is check_timing
    for name in gpu_worker.__all__:
        assert hasattr(gpu_worker, name), name


def test_timing_config_overrides_defaults_without_changing_them():
    cfg = timing_config({"repeats": 3})
    assert cfg["repeats"] == 3 and cfg["seeds"] == TIMING_DEFAULTS["seeds"]
    assert TIMING_DEFAULTS["repeats"] == 10
    assert timing_config(None) == dict(TIMING_DEFAULTS)


# ------------------------------------------------------------------------------------------------
# timing arithmetic
# ------------------------------------------------------------------------------------------------

def test_rotation_sets_cover_three_times_l2_when_a_set_fits():
    l2 = 60 << 20
    p = Problem(1024, 1024, 1024)  # 6 MiB per set
    n = rotation_set_count(l2, p.set_bytes, 3.0)
    assert n == 30
    assert n * p.set_bytes >= 3 * l2 and (n - 1) * p.set_bytes < 3 * l2


def test_rotation_sets_are_at_least_two_and_capped_by_memory():
    l2 = 60 << 20
    assert rotation_set_count(l2, 1 << 30, 3.0) == 2             # one set larger than L2
    assert rotation_set_count(l2, 5 << 30, 3.0) == 2             # even past the memory cap
    assert rotation_set_count(l2, 1 << 20, 1000.0) == MAX_ROTATION_BYTES // (1 << 20)
    assert rotation_set_count(l2, 1 << 20, 0.0) == 2


def test_rotation_sets_of_tiny_problems_are_capped_by_count():
    l2 = 60 << 20
    tiny = Problem(5, 3, 33)                                      # 558 bytes: 338,000 sets for 3 x L2
    assert rotation_set_count(l2, tiny.set_bytes, 3.0) == MAX_ROTATION_SETS
    just_over = math.ceil(3 * l2 / MAX_ROTATION_SETS)            # the smallest set the cap leaves alone
    assert rotation_set_count(l2, just_over, 3.0) * just_over >= 3 * l2
    assert rotation_set_count(l2, Problem(128, 128, 128).set_bytes, 3.0) == 1920   # as before the cap


def test_rotation_multiple_is_reported_only_where_the_cap_leaves_it_short():
    l2 = 60 << 20
    assert rotation_multiple(l2, Problem(5, 3, 33).set_bytes, 3.0) == pytest.approx(65536 * 558 / l2)   # 0.58x
    assert rotation_multiple(l2, Problem(128, 128, 128).set_bytes, 3.0) is None
    assert rotation_multiple(l2, 1 << 30, 3.0) is None          # one set larger than L2: no rotation asked


def test_bench_names_the_shapes_whose_rotation_is_short():
    from experiments.bench import short_rotations
    from genome import Problem as Shape
    shapes = [Shape.parse(s) for s in ("5x3x33", "128x128x128", "16x16x16")]
    assert short_rotations(shapes, 60 << 20, 3.0) == ["rotation 0.58x L2 at 5x3x33", "rotation 1.60x L2 at 16x16x16"]
    assert short_rotations(shapes, None, 3.0) == []              # the simulator: no L2, no rotation


def test_autotune_launches():
    assert autotune_launches(30, 4096) == 30                      # one per set, as the final timing
    assert autotune_launches(3, 4096) == 10                       # at least 10
    assert autotune_launches(65536, 4096) == 4096                 # tiny sets: a screen over the first 4096


def _autotune_with(monkeypatch, n_sets, screen_us, full_us, failing=(), most=10, finalists=2):
    """_autotune_one over scripted algorithms: screen_us[i] per launch over `most` sets, full_us[i] over all."""
    from evaluator import worker_baselines as wb
    calls = []

    def replay_times(w, cand, sets, launches, iters):
        calls.append((cand.lt_index, launches))
        return [(full_us if launches == len(sets) else screen_us)[cand.lt_index]] * iters
    monkeypatch.setattr(wb, "_replay_times", replay_times)
    monkeypatch.setattr(wb, "_gate_algorithm", lambda w, c, idx, check, ref, tol: None if idx in failing else 1e-4)
    cand = Candidate("cublaslt_autotuned", "baseline", lt_plan=SimpleNamespace(algos=list(range(len(screen_us)))))
    cfg = {**TIMING_DEFAULTS, "autotune_max_launches": most, "autotune_finalists": finalists}
    wb._autotune_one(SimpleNamespace(running=lambda *a: None), cand, list(range(n_sets)), None, None, cfg)
    return cand, calls


def test_autotune_times_every_algorithm_over_every_set_when_they_are_few(monkeypatch):
    cand, calls = _autotune_with(monkeypatch, 4, [5.0, 3.0, 4.0, 3.0], [9.0, 9.0, 9.0, 9.0], failing={0})
    assert calls == [(1, 10), (2, 10), (3, 10)]                   # max(4 sets, 10) launches, no second pass
    assert cand.lt_index == 1 and cand.result["algorithm_index"] == 1 and cand.result["algorithms_timed"] == 3
    cand, calls = _autotune_with(monkeypatch, 10, [5.0, 3.0], [9.0, 9.0])
    assert calls == [(0, 10), (1, 10)]                            # as many sets as the screen: one pass


def test_autotune_over_many_tiny_sets_screens_then_times_the_finalists_over_all(monkeypatch):
    # algorithm 1 is the fastest on the screen's warmer sets, algorithm 3 over all of them
    cand, calls = _autotune_with(monkeypatch, 100, [5.0, 2.0, 4.0, 3.0, 6.0], [5.0, 9.0, 4.0, 7.0, 1.0],
                                 failing={2})
    assert calls[:4] == [(0, 10), (1, 10), (3, 10), (4, 10)]     # the screen: 10 launches each
    assert calls[4:] == [(1, 100), (3, 100)]                      # its 2 fastest, over all 100 sets
    assert cand.lt_index == 3 and cand.result["algorithm_index"] == 3
    assert cand.result["algorithms_timed"] == 4                   # screened (the gate refused one)
    cand, _ = _autotune_with(monkeypatch, 100, [1.0, 1.0], [1.0, 1.0], failing={0, 1})
    assert not cand.alive and cand.result["status"] == "unsupported"
    # every finalist fails to time again over all sets: the screen's fastest, not "none passed the gate"
    from evaluator import worker_baselines as wb

    def second_pass_fails(w, c, sets, launches, iters):
        if launches == len(sets):
            raise RuntimeError("capture failed")
        return [[3.0, 1.0, 2.0][c.lt_index]] * iters
    monkeypatch.setattr(wb, "_replay_times", second_pass_fails)
    monkeypatch.setattr(wb, "_gate_algorithm", lambda w, c, idx, check, ref, tol: 1e-4)
    cand = Candidate("cublaslt_autotuned", "baseline", lt_plan=SimpleNamespace(algos=[0, 1, 2]))
    wb._autotune_one(SimpleNamespace(running=lambda *a: None), cand, list(range(100)), None, None,
                     {**TIMING_DEFAULTS, "autotune_max_launches": 10, "autotune_finalists": 2})
    assert cand.alive and cand.lt_index == 1 and cand.result["algorithms_timed"] == 3


class _FakeLtLib:
    """cublasLtMatmulAlgoConfigGetAttribute over a table attribute id -> (size in bytes, value); a missing id is
    an attribute this library does not know (CUBLAS_STATUS_INVALID_VALUE, 7)."""

    def __init__(self, table):
        self.table = table

    def cublasLtMatmulAlgoConfigGetAttribute(self, algo, attr, buf, size, written):
        if attr.value not in self.table:
            return 7
        n, value = self.table[attr.value]
        written._obj.value = n
        if buf is None:
            return 0
        if size.value != n:
            return 7
        ctypes.memmove(buf, value.to_bytes(n, "little", signed=True), n)
        return 0


def test_algo_config_reads_what_cublaslt_reports_and_leaves_out_what_it_does_not():
    table = {0: (4, 21), 1: (4, 18), 2: (4, 3), 3: (4, 1), 4: (4, 0), 5: (4, 0), 6: (4, 24), 8: (2, 5)}
    plan = cublaslt.LtPlan(lib=_FakeLtLib(table), handle=None, desc=None, a_desc=None, b_desc=None, c_desc=None,
                           algos=[cublaslt.HeuristicResult(), cublaslt.HeuristicResult()], formulation="tn")
    assert plan.algo_config(1) == {"algo_id": 21, "tile_id": 18, "splitk": 3, "reduction_scheme": 1,
                                   "cta_swizzling": 0, "custom_option": 0, "stages_id": 24, "cluster_shape_id": 5}
    table[8] = (16, 0)                                          # wider than 8 bytes: left out, not misread
    assert "cluster_shape_id" not in plan.algo_config(0)


def test_describe_algo_names_the_ids_it_knows_and_numbers_the_rest():
    assert cublaslt.describe_algo({"tile_id": 15, "splitk": 1, "cluster_shape_id": 5}) == \
        "tile 64x64, split-K 1, cluster 1x2x1"
    assert cublaslt.describe_algo({"tile_id": 33, "stages_id": 16, "splitk": 2, "cluster_shape_id": 9}) == \
        "tile 128x96, stages 64x4, split-K 2, cluster 2x4x1"
    assert cublaslt.describe_algo({"tile_id": 312, "splitk": 2, "cluster_shape_id": 44}) == \
        "tile 64x16, split-K 2, cluster 2x7x1"          # ids past the first 36 tiles and 16 clusters named too
    assert cublaslt.describe_algo({"tile_id": 9999, "stages_id": 30, "cluster_shape_id": 99}) == \
        "tile id 9999, stages id 30, cluster id 99"     # a later library's ids, and a gap in the stages enum
    assert cublaslt.describe_algo({"tile_id": 0}) == "tile id 0" and cublaslt.describe_algo({}) == ""


def test_autotuned_baseline_records_the_algorithm_it_kept(monkeypatch):
    from evaluator import worker_baselines as wb
    monkeypatch.setattr(wb, "_replay_times", lambda w, c, sets, launches, iters: [[5.0, 2.0, 3.0][c.lt_index]] * iters)
    monkeypatch.setattr(wb, "_gate_algorithm", lambda w, c, idx, check, ref, tol: 1e-4)
    described = SimpleNamespace(algos=[0, 1, 2], algo_config=lambda idx: {"algo_id": 10 + idx})
    cand = Candidate("cublaslt_autotuned", "baseline", lt_plan=described)
    wb._autotune_one(SimpleNamespace(running=lambda *a: None), cand, list(range(4)), None, None, dict(TIMING_DEFAULTS))
    assert cand.result["algorithm_index"] == 1 and cand.result["algorithm"] == {"algo_id": 11}

    def broken(idx):
        raise cublaslt.CublasLtError("no attributes here")
    cand = Candidate("cublaslt_autotuned", "baseline", lt_plan=SimpleNamespace(algos=[0, 1], algo_config=broken))
    wb._autotune_one(SimpleNamespace(running=lambda *a: None), cand, list(range(4)), None, None, dict(TIMING_DEFAULTS))
    assert cand.alive and "algorithm" not in cand.result      # a plan that cannot say is timed all the same


def test_baseline_set_carries_the_cublaslt_algorithms():
    from evaluator.api import BaselineSet
    from evaluator.gpu import baseline_set
    from genome import Problem as Shape
    timing = {"median_us": 10.0, "min_us": 9.0, "max_us": 11.0, "repeats": 5}
    result = SimpleNamespace(baselines={"cublaslt_autotuned": {"device": timing, "algorithms": 8, "algorithm_index": 3,
                                                              "algorithms_timed": 8, "algorithm": {"tile_id": 18}},
                                        "torch_tn": {"device": timing}}, failures={}, clocks=None)
    bs = baseline_set(Shape.parse("128x256x512"), result)
    assert bs.algorithms == {"cublaslt_autotuned": {"tile_id": 18}}
    assert bs.notes["cublaslt_autotuned"] == "8 heuristic algorithms, 8 timed, best index 3: tile 128x64"
    assert BaselineSet.from_dict(json.loads(json.dumps(bs.to_dict()))).algorithms == bs.algorithms


def test_launches_per_replay():
    assert launches_per_replay(0.01, 25, 2.0, 2000) == 200       # 2 ms of 10 us launches
    assert launches_per_replay(1.0, 25, 2.0, 2000) == 25         # never fewer than the sets
    assert launches_per_replay(0.05, 25, 2.0, 2000) == 50        # 40 rounded up to whole passes
    assert launches_per_replay(0.0, 4, 2.0, 2000) == 2000        # capped by max_launches
    assert launches_per_replay(0.0, 4, 2.0, 0) == 4
    assert launches_per_replay(0.001, 3, 2.0, 500) == 500        # 500 > 4 * 3: not rounded


def test_last_set_index():
    assert last_set_index(50, 25) == 24
    assert last_set_index(200, 30) == 19
    assert last_set_index(2, 2) == 1


def test_summary_median_min_max():
    assert summary([3.0, 1.0, 2.0]) == {"median_us": 2.0, "min_us": 1.0, "max_us": 3.0, "repeats": 3}
    assert summary([4.0, 1.0, 3.0, 2.0])["median_us"] == 2.5
    assert summary([7.0]) == {"median_us": 7.0, "min_us": 7.0, "max_us": 7.0, "repeats": 1}
    assert upper_median([4.0, 1.0, 3.0, 2.0]) == 3.0
    assert upper_median([5.0, 1.0, 3.0]) == 3.0


# ------------------------------------------------------------------------------------------------
# small rules of the gate and the baselines
# ------------------------------------------------------------------------------------------------

def test_rel_error_keeps_the_worst_seed():
    assert merged_rel_error(None, 2e-4) == 2e-4
    assert merged_rel_error(3e-4, 2e-4) == 3e-4
    assert merged_rel_error(1e-4, 2e-4) == 2e-4
    assert merged_rel_error(1e-4, math.inf) == math.inf


def test_gate_failure_status():
    assert gate_failure_status(RuntimeError("evogemm_run returned 1 (cannot implement this problem)")) == "unsupported"
    assert gate_failure_status(RuntimeError("evogemm_run returned 4 (launch failed)")) == "wrong"


def test_baseline_names():
    assert cublaslt_formulation("cublaslt_heuristic") == "tn"
    assert cublaslt_formulation("cublaslt_autotuned_nn") == "nn"
    assert is_autotuned(Candidate("cublaslt_autotuned_nn", "baseline"))
    assert not is_autotuned(Candidate("cublaslt_heuristic", "baseline"))
    assert not is_autotuned(Candidate("cublaslt_autotuned", "kernel"))


def test_problem_set_bytes():
    assert Problem(2, 3, 4).set_bytes == 2 * (2 * 4 + 3 * 4 + 2 * 3)


# ------------------------------------------------------------------------------------------------
# a fake libcublasLt
# ------------------------------------------------------------------------------------------------

CREATES = {"cublasLtCreate": "handle", "cublasLtMatmulDescCreate": "desc", "cublasLtMatrixLayoutCreate": "layout",
           "cublasLtMatmulPreferenceCreate": "pref"}
DESTROYS = {"cublasLtDestroy": "handle", "cublasLtMatmulDescDestroy": "desc", "cublasLtMatrixLayoutDestroy": "layout",
            "cublasLtMatmulPreferenceDestroy": "pref"}
# the calls plan() makes, in order, each with its occurrence number
PLAN_CALLS = [("cublasLtMatmulDescCreate", 1), ("cublasLtMatmulDescSetAttribute", 1),
              ("cublasLtMatmulDescSetAttribute", 2), ("cublasLtMatrixLayoutCreate", 1),
              ("cublasLtMatrixLayoutCreate", 2), ("cublasLtMatrixLayoutCreate", 3),
              ("cublasLtMatmulPreferenceCreate", 1), ("cublasLtMatmulPreferenceSetAttribute", 1),
              ("cublasLtMatmulAlgoGetHeuristic", 1)]


class FakeLt:
    """Stands in for libcublasLt: hands out object ids, records every create and destroy, checks
    that only live objects of the right kind are used or destroyed, and can make the n-th call of
    one function fail (non-zero status)."""

    def __init__(self, fail: "tuple[str, int] | None" = None, n_algos: int = 3, bad_states: int = 0):
        self.fail = fail
        self.n_algos, self.bad_states = n_algos, bad_states
        self.live: dict[int, str] = {}
        self.created: list[tuple[str, int]] = []
        self.destroyed: list[tuple[str, int]] = []
        self.counts: dict[str, int] = {}
        self.misuse: list[str] = []
        self.next_id = 0x1000
        for name in CREATES:
            setattr(self, name, self._creator(name))
        for name in DESTROYS:
            setattr(self, name, self._destroyer(name))

    def _call(self, name: str) -> int:
        self.counts[name] = self.counts.get(name, 0) + 1
        return 7 if self.fail == (name, self.counts[name]) else 0  # 7: CUBLAS_STATUS_INVALID_VALUE

    def _use(self, obj, kind: str) -> None:
        value = obj.value if isinstance(obj, ctypes.c_void_p) else obj
        if self.live.get(value) != kind:
            self.misuse.append(f"used {kind} {value} that is not live")

    def _creator(self, name):
        def create(ref, *args):
            status = self._call(name)
            if status:
                return status
            self.next_id += 16
            ref._obj.value = self.next_id
            self.live[self.next_id] = CREATES[name]
            self.created.append((CREATES[name], self.next_id))
            return 0
        return create

    def _destroyer(self, name):
        def destroy(obj):
            status = self._call(name)
            kind = DESTROYS[name]
            if self.live.get(obj.value) != kind:
                self.misuse.append(f"{name} of {obj.value}, which is not a live {kind}")
            else:
                del self.live[obj.value]
                self.destroyed.append((kind, obj.value))
            return status
        return destroy

    def cublasLtMatmulDescSetAttribute(self, desc, attr, ptr, size):
        self._use(desc, "desc")
        return self._call("cublasLtMatmulDescSetAttribute")

    def cublasLtMatmulPreferenceSetAttribute(self, pref, attr, ptr, size):
        self._use(pref, "pref")
        return self._call("cublasLtMatmulPreferenceSetAttribute")

    def cublasLtMatmulAlgoGetHeuristic(self, handle, desc, a, b, c, d, pref, n, results, count_ref):
        for obj, kind in ((handle, "handle"), (desc, "desc"), (a, "layout"), (b, "layout"), (c, "layout"),
                          (pref, "pref")):
            self._use(obj, kind)
        status = self._call("cublasLtMatmulAlgoGetHeuristic")
        if status:
            return status
        found = min(self.n_algos + self.bad_states, n.value)
        for i in range(found):
            results[i].state = 0 if i >= self.bad_states else 15
            results[i].algo.data[0] = i
        count_ref._obj.value = found
        return 0

    def cublasLtMatmul(self, handle, desc, alpha, w, a_desc, a, b_desc, beta, c, c_desc, d, d_desc, algo, ws,
                       ws_size, stream):
        for obj, kind in ((handle, "handle"), (desc, "desc"), (a_desc, "layout"), (b_desc, "layout"),
                          (c_desc, "layout")):
            self._use(obj, kind)
        self.last_algo = algo._obj.data[0]
        return self._call("cublasLtMatmul")

    def balanced(self) -> bool:
        """Every object created was destroyed exactly once, and nothing was misused."""
        return not self.live and sorted(self.created) == sorted(self.destroyed) and not self.misuse


# ------------------------------------------------------------------------------------------------
# cuBLASLt object life cycle
# ------------------------------------------------------------------------------------------------

def test_plan_and_handle_close_destroy_everything_they_created():
    lib = FakeLt(bad_states=1)
    handle = cublaslt.LtHandle(lib=lib)
    plan = handle.plan(128, 256, 64, formulation="tn")
    assert len(plan.algos) == 3                       # the one with a bad state is dropped
    assert sorted(lib.live.values()) == ["desc", "handle", "layout", "layout", "layout"]  # preference gone
    plan.run(1, 0x10, 0x20, 0x30, 0x40, 0)
    assert lib.last_algo == 2 and not lib.misuse      # index 1 of the usable algorithms
    plan.close()
    assert list(lib.live.values()) == ["handle"]
    plan.close()                                      # idempotent
    handle.close()
    handle.close()
    assert lib.balanced(), (lib.live, lib.misuse)
    assert lib.counts["cublasLtDestroy"] == 1 and lib.counts["cublasLtMatmulDescDestroy"] == 1


def test_one_handle_serves_many_plans():
    lib = FakeLt()
    with cublaslt.LtHandle(lib=lib) as handle:
        for formulation in ("tn", "nn", "tn"):
            with handle.plan(64, 64, 64, formulation=formulation):
                pass
        assert list(lib.live.values()) == ["handle"]
    assert lib.counts["cublasLtCreate"] == 1 and lib.counts["cublasLtMatmulDescCreate"] == 3
    assert lib.balanced()


@pytest.mark.parametrize("fail", PLAN_CALLS, ids=[f"{n}#{i}" for n, i in PLAN_CALLS])
def test_a_failing_call_in_plan_leaves_nothing_behind(fail):
    lib = FakeLt(fail=fail)
    handle = cublaslt.LtHandle(lib=lib)
    with pytest.raises(cublaslt.CublasLtError, match="cublasStatus 7"):
        handle.plan(100, 200, 300, formulation="nn")
    assert lib.counts[fail[0]] == fail[1]             # the failure did happen where intended
    assert list(lib.live.values()) == ["handle"], lib.live
    handle.close()
    assert lib.balanced(), (lib.live, lib.misuse)


def test_no_algorithm_is_an_error_that_leaves_nothing_behind():
    lib = FakeLt(n_algos=0, bad_states=2)
    with cublaslt.LtHandle(lib=lib) as handle:
        with pytest.raises(cublaslt.CublasLtError, match="no algorithm"):
            handle.plan(64, 64, 64)
    assert lib.balanced()


def test_module_plan_without_handle_owns_one(monkeypatch):
    lib = FakeLt()
    monkeypatch.setattr(cublaslt, "_find_library", lambda: lib)
    plan = cublaslt.plan(64, 64, 64)
    assert sorted(lib.live.values()) == ["desc", "handle", "layout", "layout", "layout"]
    plan.close()
    plan.close()
    assert lib.balanced()
    failing = FakeLt(fail=("cublasLtMatmulAlgoGetHeuristic", 1))
    monkeypatch.setattr(cublaslt, "_find_library", lambda: failing)
    with pytest.raises(cublaslt.CublasLtError):
        cublaslt.plan(64, 64, 64)
    assert failing.counts.get("cublasLtDestroy") == 1 and failing.balanced()


def test_a_failing_destroy_does_not_stop_the_others():
    lib = FakeLt(fail=("cublasLtMatrixLayoutDestroy", 2))
    handle = cublaslt.LtHandle(lib=lib)
    plan = handle.plan(64, 64, 64)
    with pytest.raises(cublaslt.CublasLtError, match="cublasLtMatrixLayoutDestroy"):
        plan.close()
    assert list(lib.live.values()) == ["handle"]      # the fake forgets the object anyway
    plan.close()                                      # nothing left to destroy, no error
    handle.close()
    assert lib.counts["cublasLtMatrixLayoutDestroy"] == 3 and lib.counts["cublasLtMatmulDescDestroy"] == 1


def test_plan_layouts_follow_the_formulation():
    seen = []

    class Recording(FakeLt):
        def __init__(self):
            super().__init__()
            inner = self.cublasLtMatrixLayoutCreate

            def layout(ref, dtype, rows, cols, ld):
                seen.append((rows.value, cols.value, ld.value))
                return inner(ref, dtype, rows, cols, ld)
            self.cublasLtMatrixLayoutCreate = layout

    m, n, k = 100, 200, 300
    with cublaslt.LtHandle(lib=Recording()) as handle:
        handle.plan(m, n, k, formulation="tn").close()
        handle.plan(m, n, k, formulation="nn").close()
    assert seen == [(k, n, k), (k, m, k), (n, m, n), (n, k, n), (k, m, k), (n, m, n)]


# ------------------------------------------------------------------------------------------------
# releasing candidates; the worker closes plans when a problem is done
# ------------------------------------------------------------------------------------------------

class FakeCuda:
    stream_ptr = 0

    def __init__(self, fail_on=()):
        self.destroyed = []
        self.fail_on = set(fail_on)

    def destroy_graph(self, graph, exe):
        self.destroyed.append(graph)
        if graph in self.fail_on:
            raise RuntimeError(f"cannot destroy {graph}")


class FakePlan:
    def __init__(self, fail=False):
        self.closed = 0
        self.fail = fail

    def close(self):
        self.closed += 1
        if self.fail:
            raise cublaslt.CublasLtError("destroy failed")


def test_release_candidates_releases_all_even_when_one_fails(capsys):
    plans = [FakePlan(), FakePlan(fail=True), FakePlan()]
    cands = [Candidate("k1", "kernel", graph="g1", exe="e1"),
             Candidate("b1", "baseline", graph="g2", exe="e2", lt_plan=plans[0]),
             Candidate("b2", "baseline", lt_plan=plans[1]),
             Candidate("b3", "baseline", graph="g3", exe="e3", lt_plan=plans[2]),
             Candidate("k2", "kernel")]
    cuda = FakeCuda(fail_on={"g2"})
    release_candidates(cuda, cands)
    assert cuda.destroyed == ["g1", "g2", "g3"]
    assert [p.closed for p in plans] == [1, 1, 1]     # b1's plan closed although its graph failed
    assert "releasing b1 failed" in capsys.readouterr().err
    release_candidates(cuda, cands)                   # a second release does nothing
    assert cuda.destroyed == ["g1", "g2", "g3"] and [p.closed for p in plans] == [1, 1, 1]


def fake_worker(monkeypatch, lib):
    """A gpu_worker.Worker without a GPU: fake torch, fake CUDA, fake libcublasLt."""
    monkeypatch.setattr(cublaslt, "_find_library", lambda: lib)
    torch = SimpleNamespace(
        uint8="uint8", __version__="fake", version=SimpleNamespace(cuda="0"),
        empty=lambda *a, **k: SimpleNamespace(data_ptr=lambda: 0x100),
        cuda=SimpleNamespace(ExternalStream=lambda ptr: ("stream", ptr), empty_cache=lambda: None))
    w = gpu_worker.Worker.__new__(gpu_worker.Worker)
    w.torch, w.cuda, w.kernels, w._lt = torch, FakeCuda(), {}, None
    w.device_name, w.sm_count, w.l2_bytes = "fake", 1, 1 << 20
    w.messages = []
    w.send = w.messages.append
    return w


def test_baselines_that_fail_setup_leave_no_cublaslt_objects(monkeypatch):
    lib = FakeLt(fail=("cublasLtMatrixLayoutCreate", 5))  # the second plan's second layout
    w = fake_worker(monkeypatch, lib)
    cands = []
    add_baselines(w, ["cublaslt_heuristic", "cublaslt_autotuned_nn", "torch_tn", "mystery"], Problem(64, 64, 64),
                  cands)
    status = {c.id: (c.alive, c.result.get("status")) for c in cands}
    assert status == {"cublaslt_heuristic": (True, None), "cublaslt_autotuned_nn": (False, "unsupported"),
                      "torch_tn": (True, None), "mystery": (False, "unsupported")}
    assert [m["phase"] for m in w.messages] == ["setup"] * 4
    assert cands[0].result["algorithms"] == 3 and cands[0].lt_plan is not None
    release_candidates(w.cuda, cands)
    assert list(lib.live.values()) == ["handle"]     # one handle for the worker, still open
    assert lib.counts["cublasLtCreate"] == 1
    w.close()
    w.close()
    assert lib.balanced(), (lib.live, lib.misuse)


@pytest.mark.parametrize("fail_in", ["run_gate", "measure_device_time", None])
def test_measure_closes_plans_on_every_path(monkeypatch, fail_in):
    lib = FakeLt()
    w = fake_worker(monkeypatch, lib)
    w.info = lambda: {"device": "fake"}

    def step(name, result=None):
        def run(*args, **kwargs):
            if name == fail_in:
                raise RuntimeError(f"{name} failed")
            return result
        return run

    monkeypatch.setattr(gpu_worker, "run_gate", step("run_gate"))
    monkeypatch.setattr(gpu_worker, "rotation_sets", step("rotation_sets", []))
    monkeypatch.setattr(gpu_worker, "measure_device_time", step("measure_device_time", ({}, {})))
    req = {"op": "measure", "problem": [64, 64, 64], "kernels": [], "seed": 1,
           "baselines": ["cublaslt_heuristic", "cublaslt_heuristic_nn"]}
    if fail_in:
        with pytest.raises(RuntimeError, match=fail_in):
            w.measure(req)
    else:
        result = w.measure(req)
        assert result["type"] == "result" and result["n_sets"] == 0 and result["kernels"] == {}
        assert set(result["baselines"]) == {"cublaslt_heuristic", "cublaslt_heuristic_nn"}
        assert result["clocks"] == {"before_timing": {}, "after_timing": {}}
    assert lib.counts["cublasLtMatmulDescCreate"] == 2
    assert list(lib.live.values()) == ["handle"], lib.live
    w.close()
    assert lib.balanced()


# ------------------------------------------------------------------------------------------------
# the protocol loop
# ------------------------------------------------------------------------------------------------

class ScriptedWorker:
    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.sent = []

    def send(self, msg):
        self.sent.append(msg)

    def measure(self, req):
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def test_serve_answers_and_survives_errors():
    w = ScriptedWorker([ValueError("bad shape"), {"type": "result", "n": 1}])
    lines = ['{"op": "ping"}\n', "\n", '{"op": "measure"}\n', "not json\n", '{"op": "fly"}\n', '{"op": "measure"}\n',
             '{"op": "exit"}\n', '{"op": "ping"}\n']
    assert gpu_worker.serve(w, iter(lines)) == 0
    kinds = [m["type"] for m in w.sent]
    assert kinds == ["pong", "error", "error", "error", "result"]  # nothing after exit
    assert "ValueError: bad shape" in w.sent[1]["error"] and "Traceback" in w.sent[1]["trace"]
    assert w.sent[3]["error"] == "unknown op 'fly'"


def test_serve_reports_a_fault_and_stops():
    w = ScriptedWorker([KernelFault("k1: wrote outside C (canary band overwritten)")])
    assert gpu_worker.serve(w, iter(['{"op": "measure"}\n', '{"op": "ping"}\n'])) == 4
    assert w.sent == [{"type": "fault", "error": "k1: wrote outside C (canary band overwritten)"}]
    assert gpu_worker.serve(ScriptedWorker([]), iter([])) == 0  # end of input


def test_worker_process_speaks_the_protocol_on_this_machine():
    """`python -m evaluator.gpu_worker` answers 'ready' on a GPU machine, else one 'fatal' line
    and exit code 3; either way the protocol stream holds JSON lines only."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "evaluator.gpu_worker"], input='{"op": "ping"}\n{"op": "exit"}\n',
                          capture_output=True, text=True, env=env, cwd=str(REPO), timeout=300)
    msgs = [json.loads(line) for line in proc.stdout.splitlines()]
    if msgs and msgs[0]["type"] == "ready":
        assert proc.returncode == 0 and msgs[1:] == [{"type": "pong"}]
    else:
        assert proc.returncode == 3, proc.stderr
        assert len(msgs) == 1 and msgs[0]["type"] == "fatal" and "worker start failed" in msgs[0]["error"]



# -- the accumulation bound of the gate ---------------------------------------------------------------

def _simulated_outputs(m: int, n: int, k: int, seed: int = 0):
    """(fp32 reference, fp16-rounded reference, output of an fp32-accumulating kernel, output of an
    fp16-accumulating kernel), both kernels summing MMA-sized K blocks of 16, like a tensor core."""
    import numpy as np
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((n, k)).astype(np.float16)
    ref = a.astype(np.float64) @ w.astype(np.float64).T
    acc32 = np.zeros((m, n), np.float32)
    acc16 = np.zeros((m, n), np.float16)
    for k0 in range(0, k, 16):
        part = a[:, k0:k0 + 16].astype(np.float32) @ w[:, k0:k0 + 16].astype(np.float32).T
        acc32 = acc32 + part
        acc16 = (acc16.astype(np.float32) + part).astype(np.float16)
    as64 = lambda x: x.astype(np.float16).astype(np.float64)  # noqa: E731
    return ref, as64(ref), as64(acc32), acc16.astype(np.float64)


@pytest.mark.parametrize("shape", [(64, 64, 64), (128, 128, 128), (96, 256, 256), (64, 64, 1024)])
def test_accumulation_bound_refuses_fp16_accumulation_that_the_old_bound_passed(shape):
    import numpy as np

    from evaluator.worker_gate import ACC_FLOOR, accumulation_limit, judge
    rel = lambda x, r: float(np.linalg.norm(x - r) / np.linalg.norm(r))  # noqa: E731
    ref, ref16, fp32_kernel, fp16_kernel = _simulated_outputs(*shape)
    vendor_acc = rel(fp32_kernel, ref16)           # the vendor accumulates in fp32 too
    limit = accumulation_limit(shape[2])
    assert ACC_FLOOR <= limit
    # an fp32-accumulating kernel passes both bounds, by a wide margin
    assert judge(rel(fp32_kernel, ref), rel(fp32_kernel, ref16), 1e-3, limit, vendor_acc) is None
    assert rel(fp32_kernel, ref16) < ACC_FLOOR / 2
    # the fp16-accumulating one passes the old fixed bound at short K, but not the accumulation bound
    if shape[2] <= 256:
        assert rel(fp16_kernel, ref) < 1e-3
    why = judge(rel(fp16_kernel, ref), rel(fp16_kernel, ref16), 1e-3, limit, vendor_acc)
    assert why is not None and ("accumulation below fp32" in why or "relative error" in why)
    assert rel(fp16_kernel, ref16) > 2 * limit


def _steps_off(out, ref16):
    """evaluator.worker_gate.fp16_steps_off in numpy (the gpu test test_gpu.py checks the torch one against it)."""
    import numpy as np

    from evaluator.worker_gate import ACC_STEP_FLOOR
    a = np.abs(ref16).astype(np.float16)
    step = (a.view(np.int16) + 1).view(np.float16).astype(np.float64) - a.astype(np.float64)
    rms = float(np.linalg.norm(ref16)) / math.sqrt(ref16.size)
    diff = np.abs(out - ref16)
    more = int((diff > np.maximum(step, ACC_STEP_FLOOR * rms)).sum())
    return more, int((diff > 0).sum()) - more


SMALL_OUTPUT_SHAPES = [(13, 77, 200), (8, 8, 32), (4, 16, 48), (8, 8, 17), (1, 64, 4096), (2, 32, 24), (64, 64, 64)]


@pytest.mark.parametrize("shape", SMALL_OUTPUT_SHAPES)
def test_the_small_output_allowance_passes_fp32_accumulation_and_not_fp16(shape):
    """An output of 64-4,096 elements: the simulated fp32-accumulating kernel is within one fp16 step of ref16 with
    few elements off, in each of 40 draws; the fp16-accumulating one never is."""
    from evaluator.worker_gate import steps_within_allowance
    elements = shape[0] * shape[1]
    for seed in range(40):
        _, ref16, fp32_kernel, fp16_kernel = _simulated_outputs(*shape, seed=seed)
        assert steps_within_allowance(*_steps_off(fp32_kernel, ref16), elements), (shape, seed)
        assert not steps_within_allowance(*_steps_off(fp16_kernel, ref16), elements), (shape, seed)


def test_the_small_output_allowance_counts_steps_and_needs_64_elements():
    import numpy as np

    from evaluator.worker_gate import judge, steps_within_allowance
    # s + 3 sqrt(s) + 1 elements one step off, s = 2% of the elements; none more than one step
    assert steps_within_allowance(0, 34, 1001) and not steps_within_allowance(0, 35, 1001)
    assert steps_within_allowance(0, 5, 64) and not steps_within_allowance(0, 6, 64)
    assert not steps_within_allowance(1, 0, 1001)
    assert not steps_within_allowance(0, 0, 63)            # below 64 elements the norm alone decides
    # an element one value below a power of two is half a step away; two values away is more than one step
    ref16 = np.full(100, 2.0)
    below = np.array(ref16); below[0] = np.float64(np.nextafter(np.float16(2.0), np.float16(0)))
    assert _steps_off(below, ref16) == (0, 1)
    two = np.array(ref16); two[0] = 2.0 + 2 * 2.0 ** -9
    assert _steps_off(two, ref16) == (1, 0)
    # near zero the step is at least 2^-14 of the rms: an honest fp32 difference there is not "more than a step"
    tiny = np.array(ref16); tiny[1] = 1e-6
    near = np.array(tiny); near[1] = 1e-6 + 1e-5
    assert _steps_off(near, tiny) == (0, 1)
    # judge: steps_ok lets an output over the accumulation limit pass, never one over the tolerance
    assert judge(2e-4, 8e-5, 1e-3, 5e-5, 5e-5) is not None
    assert judge(2e-4, 8e-5, 1e-3, 5e-5, 5e-5, steps_ok=True) is None
    assert "relative error" in judge(2e-3, 8e-5, 1e-3, 5e-5, 5e-5, steps_ok=True)


def test_accumulation_limit_follows_k_not_the_vendor_and_baselines_are_held_to_the_tolerance_only():
    from evaluator.worker_gate import ACC_FLOOR, accumulation_limit, judge
    assert accumulation_limit(64) == ACC_FLOOR
    # the lines measured on an H200: fp32 accumulation ~9e-7 sqrt(K), fp16 accumulation ~5e-5 sqrt(K)
    for k in (64, 1024, 4096, 16384, 28672):
        assert accumulation_limit(k) >= 4 * 9e-7 * k ** 0.5 * 0.95
        assert accumulation_limit(k) <= 5e-5 * k ** 0.5 / 8
    lim = accumulation_limit(64)
    assert judge(2e-4, 3e-4, 1e-3, lim, 2e-4) is not None
    assert judge(2e-4, 3e-4, 1e-3, lim, 2e-4, enforce_acc=False) is None
    assert "relative error" in judge(2e-3, 0.0, 1e-3, lim, 0.0, enforce_acc=False)


def test_the_accumulation_bound_is_not_a_timing_option():
    from evaluator.timing_options import TIMING_DEFAULTS, check_timing
    for key in ("acc_floor", "acc_cap", "acc_factor"):
        assert key not in TIMING_DEFAULTS
        with pytest.raises(ValueError, match="unknown timing option"):
            check_timing({key: 1.0})


def test_timed_rounds_alternate_every_candidate_with_the_reference(monkeypatch):
    import random as _random
    from types import SimpleNamespace

    from evaluator import timing_device
    from evaluator.worker_candidates import Candidate
    log = []
    monkeypatch.setattr(timing_device, "poison", lambda torch, s: log.append(("poison",)))
    monkeypatch.setattr(timing_device, "recheck_output", lambda torch, c, s, tol: log.append(("check", c.id)))
    cands = [Candidate(i, "kernel", launches=1, exe=i) for i in ("ref", "a", "b", "c")]
    clock = iter(range(1, 1000))

    def replay_ms(exe):
        log.append(("replay", exe))
        return next(clock) / 1000.0
    w = SimpleNamespace(torch=None, running=lambda *a: None, cuda=SimpleNamespace(replay_ms=replay_ms))
    timing_device.timed_rounds(w, cands, ["s0"], {"repeats": 3, "reference": "ref", "tolerance": 1e-3},
                               _random.Random(0))
    replays = [e[1] for e in log if e[0] == "replay"]
    timed, checks = replays[:21], replays[21:]                                 # a round: R a R b R c R
    for r in range(3):
        one = timed[7 * r:7 * r + 7]
        assert one[0::2] == ["ref"] * 4 and sorted(one[1::2]) == ["a", "b", "c"]  # ref on both sides of each
    assert sorted(checks) == ["a", "b", "c", "ref"]                            # then one checked replay each
    for c in cands[1:]:
        assert len(c.samples) == 3 and len(c.ref_samples) == 3 and len(c.ref_after) == 3
        assert all(s == r + 1 for s, r in zip(c.samples, c.ref_samples))         # the replay just before
        assert all(a == s + 1 for s, a in zip(c.samples, c.ref_after))          # and the one just after
    assert len(cands[0].samples) == 12 and not cands[0].ref_samples
    # a reference replay between two candidates serves as the one after the first and before the second
    firsts = sorted(cands[1:], key=lambda c: c.samples[0])
    assert firsts[0].ref_after[0] == firsts[1].ref_samples[0]
    # after the timed rounds, every candidate's output is re-checked once (the reference's too),
    # each right after a poison of its output, and those replays are not samples
    assert sorted(e[1] for e in log if e[0] == "check") == ["a", "b", "c", "ref"]
    tail = log[-12:]
    assert [e[0] for e in tail] == ["poison", "replay", "check"] * 4
    # without a reference: one replay per candidate per round, as before
    plain = [Candidate(i, "kernel", launches=1, exe=i) for i in ("a", "b")]
    log.clear()
    timing_device.timed_rounds(w, plain, ["s0"], {"repeats": 2, "reference": None, "tolerance": 1e-3},
                               _random.Random(0))
    assert len([e for e in log if e[0] == "replay"]) == 4 + 2 and not plain[0].ref_samples
    assert len(plain[0].samples) == 2


# ------------------------------------------------------------------------------------------------
# rotation sets made in one batch, on a numpy stand-in for the few torch calls they make
# ------------------------------------------------------------------------------------------------

class _NpTensor:
    """The part of a torch tensor make_set_batch and poison use, over a numpy array (views stay views)."""

    def __init__(self, arr):
        self.arr = arr

    def __getitem__(self, key):
        return _NpTensor(self.arr[key])

    def __setitem__(self, key, value):
        self.arr[key] = value

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], str):              # a dtype: same bytes
            return _NpTensor(self.arr.view(shape[0]))
        out = self.arr.view()
        out.shape = shape                                              # raises where a copy would be needed
        return _NpTensor(out)

    def transpose(self, d0, d1):
        return _NpTensor(self.arr.swapaxes(d0, d1))

    def copy_(self, other):
        self.arr[...] = other.arr if isinstance(other, _NpTensor) else other
        return self

    def fill_(self, value):
        self.arr.fill(value)
        return self

    def data_ptr(self):
        return self.arr.__array_interface__["data"][0]

    @property
    def shape(self):
        return self.arr.shape


class _NpTorch:
    """float16/float32/int16, Generator, empty (on 512-byte boundaries, as the caching allocator), randn."""
    float16, float32, int16 = "float16", "float32", "int16"
    cuda = SimpleNamespace(synchronize=lambda: None)

    class Generator:
        def __init__(self, device=None):
            import numpy as np
            self.rng = np.random.default_rng(0)

        def manual_seed(self, seed):
            import numpy as np
            self.rng = np.random.default_rng(seed)

    @staticmethod
    def empty(shape, device=None, dtype=None):
        import numpy as np
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape))
        raw = np.full(n * 2 + 512, 0x55, dtype=np.uint8)                # garbage, as cudaMalloc leaves it
        skip = (-raw.__array_interface__["data"][0]) % 512
        return _NpTensor(raw[skip:skip + n * 2].view(dtype).reshape(shape))

    @staticmethod
    def randn(shape, generator=None, device=None, dtype=None):
        return _NpTensor(generator.rng.standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("shape,n_sets", [((5, 3, 33), 300), ((1, 7, 1), 50), ((16, 40, 24), 9)])
def test_batched_rotation_sets_are_separate_aligned_and_banded(shape, n_sets):
    import numpy as np

    from evaluator.worker_inputs import CANARY_ELEMS, CANARY_FP16, NAN_FP16, make_set_batch, poison
    m, n, k = shape
    sets = make_set_batch(_NpTorch, Problem(m, n, k), n_sets, seed=7, need_wt=True, chunk_elems=1000)
    assert len(sets) == n_sets
    for s in sets:   # every operand where its own allocation would start (kernels refuse them off 16 bytes)
        assert [t.shape for t in (s.a, s.w, s.wt, s.c)] == [(m, k), (n, k), (k, n), (m, n)]
        assert all(t.data_ptr() % 256 == 0 for t in (s.a, s.w, s.wt, s.c))
        assert all(t.arr.flags.c_contiguous for t in (s.a, s.w, s.wt, s.c))
        np.testing.assert_array_equal(s.wt.arr, s.w.arr.T)
        raw = s.c_flat.arr.view(np.int16)
        assert raw.size == 2 * CANARY_ELEMS + m * n
        assert (raw[:CANARY_ELEMS] == CANARY_FP16).all() and (raw[-CANARY_ELEMS:] == CANARY_FP16).all()
        assert (s.c.arr.view(np.int16) == NAN_FP16).all()
    a = np.stack([s.a.arr for s in sets]).astype(np.float64)
    assert np.isfinite(a).all() and len({s.a.arr.tobytes() for s in sets}) == n_sets   # every set its own A
    if a.size > 1000:
        assert abs(a.std() - 1.0) < 0.1
    # one set's output written: the others' C and bands are untouched; poison restores it
    mid = sets[n_sets // 2]
    mid.c.arr[...] = 1.0
    for other in sets:
        if other is not mid:
            assert (other.c.arr.view(np.int16) == NAN_FP16).all()
            assert (other.c_flat.arr.view(np.int16)[:CANARY_ELEMS] == CANARY_FP16).all()
            assert (other.c_flat.arr.view(np.int16)[-CANARY_ELEMS:] == CANARY_FP16).all()
    poison(_NpTorch, mid)
    assert (mid.c.arr.view(np.int16) == NAN_FP16).all()
    # the same seed gives the same sets
    again = make_set_batch(_NpTorch, Problem(m, n, k), n_sets, seed=7, need_wt=False, chunk_elems=1000)
    assert all(np.array_equal(x.a.arr, y.a.arr) and y.wt is None for x, y in zip(sets, again))
