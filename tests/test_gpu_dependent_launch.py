"""A kernel launched as a programmatic dependent launch is timed as it runs after any other kernel
(pytest -m gpu; skips cleanly without a Hopper GPU): the worker's timing graphs make the programmatic
edge from one call to the next a full dependency, so no call overlaps its own previous one (which no
foreign kernel before it would allow; docs/results/h200-gemm-pdl), while the dependent launches inside
one call (a GEMM and its own reduction) keep their edges."""

import pytest

from genome import Problem
from evaluator.api import STATUS_OK

from planted import dependent_launch, skinny_base

pytestmark = pytest.mark.gpu
QUICK = {"repeats": 5, "warmup_s": 0.3, "server_samples": 3, "call_samples": 5, "autotune_algos": 8}
CALLS = 8
PROGRAMMATIC = 1  # cudaGraphDependencyTypeProgrammatic


def splitk_pdl():
    """sm90_splitk with its reduction a dependent launch of its GEMM (pdl), 4 splits."""
    from templates import family_registry
    fam = family_registry().resolve("sm90_splitk")
    return fam.space.validate(fam.seeds()[0][1].with_params(pdl=1, ksplit=4))


@pytest.fixture(scope="module")
def builds():
    from evaluator.compile import Compiler
    compiler = Compiler.default()
    try:
        results = compiler.build_many([skinny_base(), dependent_launch(), splitk_pdl()])
    finally:
        compiler.close()
    assert all(r.ok for r in results), [r.reason for r in results]
    return dict(zip(("base", "planted", "splitk_pdl"), results))


def _edges(rt, graph) -> list:
    from evaluator.worker_cuda import graph_edges
    return [(int(d.type), int(d.from_port)) for d in graph_edges(rt, graph)[2]]


@pytest.mark.parametrize("name,shape,made_full,kept", [
    ("base", "128x128x128", 0, 0),                       # plain launches: nothing to change
    ("planted", "128x128x128", CALLS - 1, 0),            # every call a dependent launch of the one before
    ("splitk_pdl", "256x512x4096", 0, CALLS),            # the reduction of each call keeps its edge
])
def test_only_the_edges_between_calls_become_full(builds, name, shape, made_full, kept):
    import torch
    from evaluator.kernel_abi import EvoKernel
    from evaluator.worker_cuda import Cuda
    p = Problem.parse(shape)
    m, n, k = p.m, p.n, p.k
    a = torch.randn(m, k, device="cuda", dtype=torch.half)
    w = torch.randn(n, k, device="cuda", dtype=torch.half)
    c = torch.empty(m, n, device="cuda", dtype=torch.half)
    build = builds[name]
    kernel = EvoKernel(build.library, build.knobs)
    ws_bytes = max(kernel.workspace_size(m, n, k), 256)
    ws = torch.empty(ws_bytes, device="cuda", dtype=torch.uint8)
    cuda = Cuda()

    def call(i):
        assert kernel.run(m, n, k, a.data_ptr(), w.data_ptr(), c.data_ptr(), ws.data_ptr(), ws_bytes,
                          cuda.stream_ptr) == 0

    graph, exe = cuda.capture(call, CALLS)
    try:
        edges = _edges(cuda.rt, graph)
        print(name, shape, "made full", cuda.edges_made_full, "edges", edges)
        assert cuda.edges_made_full == made_full
        assert sum(t == PROGRAMMATIC for t, _ in edges) == kept
        cuda.replay_ms(exe)
        torch.cuda.synchronize()
        ref = a.float() @ w.float().t()
        assert ((c.float() - ref).norm() / ref.norm()).item() < 1e-3
    finally:
        cuda.destroy_graph(graph, exe)


def test_a_dependent_launch_gains_nothing_over_its_twin_in_the_device_timing(tmp_path):
    from evaluator.gpu import GpuEvaluator
    ev = GpuEvaluator(timing=QUICK, silence_timeout_s=30, log_dir=tmp_path)
    try:
        base, planted = ev.evaluate([skinny_base(), dependent_launch()], Problem.parse("128x128x128"))
    finally:
        ev.close()
    print("base", base.time_us, "planted", planted.time_us)
    assert base.status == STATUS_OK and planted.status == STATUS_OK, (base.reason, planted.reason)
    # back to back with its programmatic edges kept, the planted kernel ran at 0.76 of the base (H200);
    # timed after its own completed call it is the base kernel with one launch attribute more
    assert planted.time_us >= 0.95 * base.time_us
    log = "".join(p.read_text() for p in tmp_path.glob("gpu*-worker.log"))
    assert "programmatic edges of its graph made full" in log, log[-2000:]


def test_the_package_bench_graphs_make_the_same_edges_full(builds):
    """experiments/bench_package.py (`evogemm bench` on an exported package) captures through torch's graphs:
    the same edges become full there, and none of cuBLAS's, whose programmatic edges at 64x64x4096 (two kernels
    a call) all lie inside a call."""
    import torch
    from evaluator.kernel_abi import EvoKernel
    from experiments.bench_package import _capture, _time_graph
    m, n, k = 64, 64, 4096
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half), torch.randn(n, k, device="cuda", dtype=torch.half))
            for _ in range(CALLS)]
    kernel = EvoKernel(builds["planted"].library, builds["planted"].knobs)

    def planted_op(a, w):
        c = torch.empty(m, n, device="cuda", dtype=torch.half)
        assert kernel.run(m, n, k, a.data_ptr(), w.data_ptr(), c.data_ptr(), 0, 0,
                          torch.cuda.current_stream().cuda_stream) == 0
        return c

    (g_op, full_op) = _capture(torch, planted_op, sets)
    (g_ref, full_ref) = _capture(torch, lambda a, w: a @ w.t(), sets)
    print("made full: planted", full_op, "torch.matmul", full_ref)
    assert full_op == CALLS - 1 and full_ref == 0
    assert _time_graph(torch, g_op, CALLS, 2) > 0 and _time_graph(torch, g_ref, CALLS, 2) > 0
