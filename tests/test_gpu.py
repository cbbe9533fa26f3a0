"""Tests on a real Hopper GPU (pytest -m gpu). They skip cleanly without one."""

from pathlib import Path

import pytest

from genome import Genome, Problem
from evaluator.api import STATUS_CRASHED, STATUS_INVALID, STATUS_OK, STATUS_TIMEOUT

from planted import base_genome, fp16_accumulating, planted

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parent.parent
QUICK = {"repeats": 3, "warmup_s": 0.2, "server_samples": 3, "call_samples": 5, "autotune_algos": 8}


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    from evaluator.gpu import GpuEvaluator
    ev = GpuEvaluator(timing=QUICK, silence_timeout_s=30, log_dir=tmp_path_factory.mktemp("gpulog"))
    yield ev
    ev.close()


SEEDS = ["coop_128x256x64_c2x1", "pp_64x256x64_c1x2", "coop_128x208x64_sk", "pp_128x128x64_c1x1"]


def genomes(names):
    return [Genome.load(REPO / "templates" / "sm90_cutlass" / "seeds" / f"{n}.json") for n in names]


IN_FLIGHT_SHAPES = ["2048x2048x2048", "4096x1024x1024"]


def short_campaign(name: str, shapes: "list[str]", in_flight: int = 1, backend: str = "gpu") -> dict:
    """The short GPU campaigns of these tests: the family's seeds, then runtime-knob moves only (no
    build past the seeds; tests/gpu_prebuild.py builds those by running the same campaign on the
    simulator, `backend="simulator"`)."""
    return {
        "name": name, "seed": 3, "shapes": list(shapes),
        "budget": {"evaluations_per_shape": 8},
        "population": {"size": 4, "islands": 1, "offspring": 4, "elite": 1, "migration_size": 0,
                       "seed_fraction": 1.0, "shapes_in_flight": in_flight},
        "operators": [{"name": "param_mutate", "params": {"kinds": ["runtime"]}}],
        "selection": {"policy": "thompson"},
        "evaluator": {"backend": backend, **({"timing": QUICK} if backend == "gpu" else {})},
    }


def test_kernels_match_fp32_reference_on_three_shapes(evaluator):
    gs = genomes(SEEDS)
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
    for name in ("cublaslt_heuristic", "cublaslt_autotuned"):       # which algorithm each ran, as cuBLASLt says
        assert {"algo_id", "tile_id", "splitk", "stages_id"} <= set(bs.algorithms[name]), bs.algorithms


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


def test_fp16_steps_off_counts_as_the_numpy_twin_of_the_units_tests():
    """evaluator.worker_gate.fp16_steps_off on the GPU agrees with the numpy count that
    tests/test_gpu_worker_units.py calibrates the small-output allowance with."""
    import torch

    from evaluator.worker_gate import fp16_steps_off
    from test_gpu_worker_units import SMALL_OUTPUT_SHAPES, _simulated_outputs, _steps_off
    for shape in SMALL_OUTPUT_SHAPES:
        for seed in range(5):
            _, ref16, fp32_kernel, fp16_kernel = _simulated_outputs(*shape, seed=seed)
            gref = torch.tensor(ref16, dtype=torch.float32, device="cuda")
            for out in (fp32_kernel, fp16_kernel):
                got = fp16_steps_off(torch, torch.tensor(out, dtype=torch.float32, device="cuda"), gref)
                assert got == _steps_off(out, ref16), (shape, seed, got)


def test_planted_fp16_accumulation_is_refused_at_every_public_shape(evaluator):
    """MEASURE.md: the gate must refuse fp16 accumulation at every K. The same kernel with its
    fp32 accumulator passes everywhere (so the bound does not refuse honest kernels)."""
    from evaluator.worker_gate import accumulation_limit
    from experiments.schema import load_suite
    shapes = load_suite(REPO / "experiments" / "suites" / "public.yaml")
    shapes += [Problem(64, 64, 64), Problem(128, 4096, 64), Problem(4096, 4096, 64)]
    # small outputs (1,152, 64 and 512 elements), where the gate's small-output allowance is asked
    shapes += [Problem(16, 72, 200), Problem(8, 8, 32), Problem(8, 64, 4096)]
    bad, good = fp16_accumulating(), base_genome()
    rows = []
    for problem in shapes:
        fp16, fp32 = evaluator.evaluate([bad, good], problem)
        rows.append((problem.name, fp16.status, fp16.reason, fp32.status, fp32.rel_error, fp32.acc_error))
        print(f"{problem.name:>20} limit {accumulation_limit(problem.k):.3g}  fp16-acc: {fp16.status} "
              f"({fp16.reason})  fp32-acc: {fp32.status} rel {fp32.rel_error:.3g} acc {fp32.acc_error:.3g}")
    assert all(r[1] == "wrong" for r in rows), [r for r in rows if r[1] != "wrong"]
    short_k = [r for r in rows if r[0].endswith("x64") or r[0] == "128x128x128"]
    assert short_k and all("accumulation below fp32" in r[2] for r in short_k)
    assert all(r[3] == STATUS_OK for r in rows), [r for r in rows if r[3] != STATUS_OK]


def test_short_campaign_runs_on_the_gpu_and_re_verifies(tmp_path):
    """The engine, the GPU evaluator and the final interleaved re-measurement, end to end."""
    import sqlite3

    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign

    class Quiet:
        def update(self, rows, simulated=None, evaluator=None):
            pass

    config = parse_campaign(short_campaign("gpu-smoke", ["2048x2048x2048"]), base_dir=tmp_path)
    folder = tmp_path / "campaign"
    create_campaign(config, folder)
    result = run_campaign(folder, progress=Quiet())
    state = result.states["2048x2048x2048"]
    assert state.evaluations == 8 and state.best is not None
    conn = sqlite3.connect(str(folder / "campaign.db"))
    statuses = dict(conn.execute("SELECT status, COUNT(*) FROM evaluations GROUP BY status").fetchall())
    (verified,) = conn.execute("SELECT COUNT(*) FROM verified").fetchone()
    conn.close()
    print(statuses, state.best.time_us, state.best_vendor_us)
    assert statuses.get("ok", 0) >= 6 and verified == 1
    report = (folder / "report.md").read_text()
    assert "re-measured, interleaved with the baselines" in report and "Simulated" not in report


def test_two_shapes_in_flight_take_turns_on_the_one_gpu(tmp_path):
    """`population.shapes_in_flight: 2` on the single-GPU backend: both shapes are searched side by
    side (their builds overlap), their measurements take turns on the worker, and each ends
    confirmed and re-verified."""
    import sqlite3

    from experiments.campaign import create_campaign, run_campaign
    from experiments.schema import parse_campaign

    class Quiet:
        def update(self, rows, simulated=None, evaluator=None):
            pass

    shapes = IN_FLIGHT_SHAPES
    folder = tmp_path / "campaign"
    create_campaign(parse_campaign(short_campaign("gpu-two-in-flight", shapes, in_flight=2), base_dir=tmp_path),
                    folder)
    result = run_campaign(folder, progress=Quiet())
    assert all(result.states[s].evaluations == 8 and result.states[s].best is not None for s in shapes)
    log = (folder / "campaign.log").read_text()
    assert "shapes in flight: up to 2 (2 at once on this evaluator)" in log
    conn = sqlite3.connect(str(folder / "campaign.db"))
    verified = dict(conn.execute("SELECT problem, COUNT(*) FROM verified GROUP BY problem").fetchall())
    conn.close()
    assert verified == {s: 1 for s in shapes}
    for s in shapes:
        print(s, result.states[s].best.time_us, result.states[s].best_vendor_us)


def test_rotation_sets_made_in_one_batch_are_separate_sets_with_their_own_canaries():
    """Tiny problems rotate over up to 65536 input sets, made as views of a few buffers
    (worker_inputs.make_set_batch): each set its own data, C poisoned, canary bands on both sides."""
    import torch

    from evaluator.worker_gate import check_output, gate_reference
    from evaluator.worker_inputs import CANARY_ELEMS, CANARY_FP16, Problem as P, make_set_batch, poison
    p = P(5, 3, 33)
    sets = make_set_batch(torch, p, 300, seed=1, need_wt=True, chunk_elems=1000)   # the batch filled in chunks
    assert len(sets) == 300 and len({s.c_ptr() for s in sets}) == 300
    a = torch.stack([s.a for s in sets]).float()
    assert a.shape == (300, 5, 33) and torch.isfinite(a).all() and abs(a.std().item() - 1.0) < 0.05
    assert not torch.equal(sets[0].a, sets[1].a) and not torch.equal(sets[0].w, sets[299].w)
    for s in sets:   # every operand where its own allocation would start (kernels refuse them off 16 bytes)
        assert all(t.data_ptr() % 256 == 0 for t in (s.a, s.w, s.wt, s.c))
    for s in (sets[0], sets[150], sets[299]):
        assert s.a.is_contiguous() and s.w.is_contiguous() and s.wt.is_contiguous()
        assert torch.equal(s.wt, s.w.t()) and s.c.shape == (5, 3)
        raw = s.c_flat.view(torch.int16)
        assert raw.numel() == 2 * CANARY_ELEMS + 15
        assert (raw[:CANARY_ELEMS] == CANARY_FP16).all() and (raw[-CANARY_ELEMS:] == CANARY_FP16).all()
        assert torch.isnan(s.c.float()).all()
    # a right output in one set passes the gate's check and leaves its neighbours as they were
    mid = sets[150]
    torch.matmul(mid.a, mid.w.t(), out=mid.c)
    ok, err, reason, corrupted, _ = check_output(torch, mid, gate_reference(torch, mid), 1e-3, enforce_acc=False)
    assert ok and not corrupted and err < 1e-3, reason
    for nb in (sets[149], sets[151]):
        assert torch.isnan(nb.c.float()).all()
        assert (nb.c_flat.view(torch.int16)[:CANARY_ELEMS] == CANARY_FP16).all()
    poison(torch, mid)
    assert torch.isnan(mid.c.float()).all()
    # a write past C is seen as a band overwritten
    mid.c_flat[CANARY_ELEMS + 15] = 0.0
    assert check_output(torch, mid, gate_reference(torch, mid), 1e-3)[3]
