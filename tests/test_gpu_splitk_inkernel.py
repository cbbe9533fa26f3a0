"""sm90_splitk's in-kernel reduction (`fixup: inkernel`) on a real Hopper GPU (pytest -m gpu; skips cleanly
without one): the gate at shapes with edge tiles and uneven shares of a tile; calls that share one workspace back
to back and across graph replays with new inputs, starting from a workspace of garbage; the co-residency check."""

import pytest

from genome import Problem
from templates import family_registry

pytestmark = pytest.mark.gpu
QUICK = {"repeats": 3, "warmup_s": 0.2, "server_samples": 3, "call_samples": 5, "autotune_algos": 8}
FAMILIES = family_registry()
CALLS = 4


def inkernel_genomes() -> list:
    """`fixup: inkernel` over every one-CTA-cluster seed of sm90_splitk (ping-pong and cooperative, tiles
    64x64 to 128x128), one genome per build and ksplit."""
    fam = FAMILIES.resolve("sm90_splitk")
    out = {}
    for _, g in fam.seeds():
        if g.get("cluster_m") * g.get("cluster_n") == 1:
            ik = fam.space.validate(g.with_params(fixup="inkernel"))
            out[ik.id] = ik
    return list(out.values())


def the_64x128_pingpong():
    return next(g for g in inkernel_genomes()
                if (g.get("tile_m"), g.get("tile_n"), g.get("schedule")) == (64, 128, "pingpong"))


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    from evaluator.gpu import GpuEvaluator
    ev = GpuEvaluator(timing=QUICK, silence_timeout_s=30, log_dir=tmp_path_factory.mktemp("gpulog"))
    yield ev
    ev.close()


# (shape, ksplit): edge tiles in M and N (125x264), shares of a tile that are not equal (3 splits: 2048 quads of a
# 64x128 tile), 128 work tiles of 132 SMs (512x512x16384, 64x128 tiles), a single tile in 16 splits (64x64x4096)
CASES = [("125x264x8192", 8), ("64x64x6120", 3), ("512x512x16384", 4), ("64x64x4096", 16), ("256x1024x8192", 2)]


@pytest.mark.parametrize("shape,ksplit", CASES)
def test_inkernel_reduction_passes_the_gate(evaluator, shape, ksplit):
    fam = FAMILIES.resolve("sm90_splitk")
    problem = Problem.parse(shape)
    genomes = [fam.space.validate(g.with_params(ksplit=ksplit)) for g in inkernel_genomes()]
    genomes = [g for g in genomes if fam.space.is_valid(g, problem)]
    assert genomes, f"{shape}: no in-kernel genome fits with {ksplit} splits"
    results = evaluator.evaluate(genomes, problem)
    for g, m in zip(genomes, results):
        print(shape, g.short(), m.status, m.rel_error, m.acc_error, m.time_us)
    failed = [(g.short(), m.status, m.reason) for g, m in zip(genomes, results) if not m.ok]
    assert not failed, failed
    assert all(m.rel_error <= 1e-3 for m in results)


@pytest.fixture(scope="module")
def kernel():
    from evaluator.compile import Compiler
    from evaluator.kernel_abi import EvoKernel
    fam = FAMILIES.resolve("sm90_splitk")
    genome = fam.space.validate(the_64x128_pingpong().with_params(ksplit=4))
    compiler = Compiler.default()
    try:
        build = compiler.build(genome)
    finally:
        compiler.close()
    assert build.ok, build.reason
    return EvoKernel(build.library, build.knobs)


def test_one_workspace_serves_calls_back_to_back_and_graph_replays_with_new_inputs(kernel):
    """Four calls in one graph on four input sets share a workspace that starts as random bytes; the graph is
    replayed, then replayed again after every input changed. A call that took a stale count of another launch
    (or of the garbage) for its own would add partial sums not yet written, or those of the previous inputs."""
    import torch
    from evaluator.worker_cuda import Cuda
    m, n, k = 256, 512, 4096                      # 4 x 4 tiles of 64x128, 4 splits: 64 CTAs
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half), torch.randn(n, k, device="cuda", dtype=torch.half))
            for _ in range(CALLS)]
    outs = [torch.zeros(m, n, device="cuda", dtype=torch.half) for _ in range(CALLS)]
    ws_bytes = kernel.workspace_size(m, n, k)
    ws = torch.randint(0, 256, (ws_bytes,), device="cuda", dtype=torch.uint8)
    cuda = Cuda()

    def call(i):
        a, w = sets[i]
        assert kernel.run(m, n, k, a.data_ptr(), w.data_ptr(), outs[i].data_ptr(), ws.data_ptr(), ws_bytes,
                          cuda.stream_ptr) == 0

    def check(tag):
        torch.cuda.synchronize()
        for i, ((a, w), c) in enumerate(zip(sets, outs)):
            ref = a.float() @ w.float().t()
            err = ((c.float() - ref).norm() / ref.norm()).item()
            print(tag, i, err)
            assert err < 1e-3, (tag, i, err)

    graph, exe = cuda.capture(call, CALLS)
    try:
        cuda.replay_ms(exe)
        check("first replay")
        for a, w in sets:
            a.normal_()
            w.normal_()
        for c in outs:
            c.zero_()
        cuda.replay_ms(exe)
        check("replay with new inputs")
    finally:
        cuda.destroy_graph(graph, exe)


def test_more_work_tiles_than_the_sms_hold_is_refused(kernel):
    """Every split waits for its tile's others, so tiles x splits above the SM count would never finish: the
    kernel says it cannot implement the problem (and the space's shape rule keeps a search from proposing it)."""
    import torch
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert kernel.can_implement(256, 512, 4096) == 0                  # 16 tiles x 4 splits
    m = 64 * (sms // 4 + 1)                                            # (sms // 4 + 1) x 1 tiles x 4 splits > sms
    assert kernel.can_implement(m, 128, 4096) == 1
