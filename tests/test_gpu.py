"""Tests on a real Hopper GPU (pytest -m gpu). They skip cleanly without one."""

import glob
from pathlib import Path

import pytest

from genome import Genome, Problem
from evaluator.api import STATUS_CRASHED, STATUS_INVALID, STATUS_OK, STATUS_TIMEOUT

from planted import base_genome, planted

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parent.parent
QUICK = {"repeats": 3, "warmup_s": 0.2, "server_samples": 3, "call_samples": 5, "autotune_algos": 8}


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    from evaluator.gpu import GpuEvaluator
    ev = GpuEvaluator(timing=QUICK, silence_timeout_s=30, log_dir=tmp_path_factory.mktemp("gpulog"))
    yield ev
    ev.close()


def genomes(names):
    return [Genome.load(REPO / "experiments" / "genomes" / f"{n}.json") for n in names]


def test_kernels_match_fp32_reference_on_three_shapes(evaluator):
    gs = genomes(["coop_128x256x64_c2x1", "pp_64x256x64_c1x2", "coop_128x208x64_sk", "pp_128x128x64_c1x1"])
    for shape in ("1000x1000x1000", "256x4096x256", "2048x2048x2048"):
        problem = Problem.parse(shape)
        results = evaluator.evaluate(gs, problem)
        for g, m in zip(gs, results):
            print(shape, g.short(), m.status, m.rel_error, m.time_us, m.reason)
            assert m.status == STATUS_OK, (shape, g.short(), m.reason)
            assert m.rel_error is not None and m.rel_error <= 1e-3
            assert m.time_us and m.time_us > 0


def test_unaligned_shape_is_refused_not_run(evaluator):
    [m] = evaluator.evaluate(genomes(["pp_128x128x64_c1x1"]), Problem(1000, 1000, 1001))
    assert m.status == STATUS_INVALID and "K=1001" in m.reason


def test_baselines_pass_the_gate(evaluator):
    bs = evaluator.baselines(Problem(1024, 1024, 1024))
    print(bs)
    for name in ("torch_tn", "torch_nn", "cublaslt_heuristic", "cublaslt_autotuned"):
        assert name in bs.device, bs.notes
        assert bs.rel_error[name] <= 1e-3
    assert 2.0 < bs.best_vendor_us < 50.0


def test_planted_out_of_bounds_write_and_hang_are_caught(evaluator):
    good = base_genome()
    batch = [planted("oob"), good, planted("hang")]
    problem = Problem(512, 512, 512)
    before = evaluator.pool.restarts
    results = evaluator.evaluate(batch, problem)
    for g, m in zip(batch, results):
        print(g.id, m.status, m.reason)
    oob, ok, hang = results
    assert oob.status == STATUS_CRASHED and "canary" in oob.reason
    assert hang.status == STATUS_TIMEOUT and "hung" in hang.reason
    assert ok.status == STATUS_OK and ok.rel_error <= 1e-3
    assert evaluator.pool.restarts >= before + 2
    # and the evaluator keeps working afterwards
    [again] = evaluator.evaluate([good], Problem(256, 256, 256))
    assert again.status == STATUS_OK
