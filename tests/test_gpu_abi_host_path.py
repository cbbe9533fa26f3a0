"""The C ABI's host path on a real Hopper GPU (issue 10; pytest -m gpu, skips cleanly without one).
evogemm_run sets the kernel's attributes once per device and initialises no CUTLASS object per
call, so these calls check that nothing the launch needs was lost: one kernel of every family,
called many times through evaluator/kernel_abi.py alternating two shapes and two sets of buffers
(output poisoned, workspace filled with garbage before every call: stream-K's barriers and the
split-K partial sums must be set up by the call itself), then a fresh copy of each library called
first from several threads at once, and first inside a CUDA-graph capture."""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass

import pytest

from genome import Problem
from templates import family_registry

pytestmark = pytest.mark.gpu
FAMILIES = family_registry()
TOLERANCE = 1e-3     # the gate's relative Frobenius error (evaluator/timing_options.py)
CALLS = 50


@dataclass(frozen=True)
class Case:
    family: str
    seed: str
    shapes: tuple[str, str]
    workspace: bool = False   # the kernel needs a workspace on these shapes (stream-K or split-K)
    changes: tuple = ()       # (parameter, value) pairs the seed is taken with

    @property
    def key(self) -> str:
        return f"{self.family}/{self.seed}" + "".join(f"/{k}={v}" for k, v in self.changes)

    def genome(self):
        family = FAMILIES.resolve(self.family)
        seed = dict(family.seeds())[self.seed]
        return family.space.validate(seed.with_params(**dict(self.changes))) if self.changes else seed


CASES = [
    Case("sm90_cutlass", "coop_128x256x64_c2x1", ("512x1024x512", "384x768x256")),          # cluster launch
    Case("sm90_cutlass", "coop_128x64x128_sk_streamk", ("256x256x4096", "128x384x2048"), workspace=True),
    # stream-K in clusters of 4 with the device's cluster count (cluster_grid occupancy: asked on the first call)
    Case("sm90_cutlass", "coop_128x64x128_sk_streamk", ("256x256x4096", "128x384x2048"), workspace=True,
         changes=(("cluster_m", 2), ("cluster_n", 2), ("cluster_grid", "occupancy"))),
    Case("sm90_splitk", "pp_64x128x64_k4", ("256x512x4096", "128x256x2048"), workspace=True),
    Case("sm90_padded", "pp_64x128x64_c1x1", ("1000x1000x999", "1023x1023x1024"), workspace=True),
    Case("sm90_lean", "ws_128x96x64_c1x2", ("256x384x512", "128x192x256")),                 # cluster launch
    Case("sm90_cpasync", "ws_128x64x64_a4_direct2", ("1000x1002x1000", "384x770x252")),   # cp.async, direct C
    Case("sm80_cutlass", "splitk_64x64x64_s4_k8", ("512x512x2048", "256x128x1024"), workspace=True),
    Case("skinny_mma", "decode_r16_k4_u2_pf_c2", ("16x4096x4096", "8x2048x1024")),
    Case("sm90_swapab", "coop_256x128x64_c1x2", ("384x1024x512", "136x776x256")),            # transposed, cluster
    Case("skinny_tma", "r32_p4_s4_w8_c2", ("16x4096x4096", "4104x8x1032")),  # TMA maps per call, A streamed
]


@pytest.fixture(scope="module")
def libraries():
    """The kernels of CASES, built once (in parallel) into the kernel cache the GPU evaluator uses (EVOGEMM_CACHE:
    where tests/gpu_prebuild.py builds them ahead; a private cache rebuilt all eleven on the GPU machine, 56 s of the
    whole `pytest -m gpu` on an H100): case key -> BuildResult."""
    from evaluator.compile import Compiler
    genomes = [c.genome() for c in CASES]
    compiler = Compiler.default()
    try:
        results = compiler.build_many(genomes)
    finally:
        compiler.close()
    return {c.key: r for c, r in zip(CASES, results)}


def kernel_of(libraries, case: Case, tmp_path=None):
    """The case's kernel through the ABI binding; with tmp_path, from a fresh copy of its library
    (a new dlopen: none of its once-per-device state is set yet)."""
    from evaluator.kernel_abi import EvoKernel
    build = libraries[case.key]
    assert build.ok, (case.key, build.reason)
    path = build.library
    if tmp_path is not None:
        path = str(tmp_path / f"fresh_{case.key.replace('/', '_').replace('=', '-')}.so")
        shutil.copyfile(build.library, path)
    return EvoKernel(path, build.knobs)


@dataclass
class Operands:
    problem: Problem
    a: object
    w: object
    c: object
    ref: object


def operands(torch, p: Problem, seed: int) -> Operands:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((p.m, p.k), generator=gen, device="cuda").half()
    w = torch.randn((p.n, p.k), generator=gen, device="cuda").half()
    c = torch.empty((p.m, p.n), device="cuda", dtype=torch.float16)
    return Operands(p, a, w, c, torch.matmul(a.float(), w.float().t()))


def rel_error(torch, o: Operands) -> float:
    out = o.c.float()
    if not torch.isfinite(out).all():
        return float("inf")
    return float(torch.linalg.norm(out - o.ref) / torch.linalg.norm(o.ref))


def wait(torch, stream, seconds: float = 20.0) -> None:
    """Wait for the stream, failing (not hanging) when a kernel never finishes: a stream-K kernel
    whose barriers were not reset may spin forever."""
    done = torch.cuda.Event()
    done.record(stream)
    deadline = time.monotonic() + seconds
    while not done.query():
        if time.monotonic() > deadline:
            pytest.fail(f"the kernel did not finish within {seconds:.0f} s (a workspace not re-initialised?)")
        time.sleep(0.001)


def enqueue(kernel, o: Operands, ws, stream) -> int:
    p = o.problem
    return kernel.run(p.m, p.n, p.k, o.a.data_ptr(), o.w.data_ptr(), o.c.data_ptr(), ws.data_ptr(), ws.numel(),
                      stream.cuda_stream)


def workspace_for(torch, kernel, problems) -> "tuple[object, list[int]]":
    sizes = [kernel.workspace_size(p.m, p.n, p.k) for p in problems]
    return torch.empty(max(256, *sizes), device="cuda", dtype=torch.uint8), sizes


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_many_calls_alternating_shapes_and_buffers_stay_right(libraries, case):
    import torch
    kernel = kernel_of(libraries, case)
    problems = [Problem.parse(s) for s in case.shapes]
    for p in problems:
        assert kernel.can_implement(p.m, p.n, p.k) == 0, (case.key, p)
    sets = [[operands(torch, p, seed=100 * i + j) for j in range(2)] for i, p in enumerate(problems)]
    ws, sizes = workspace_for(torch, kernel, problems)
    if case.workspace:
        assert any(s > 0 for s in sizes), f"{case.key} needs no workspace on {case.shapes}: the case tests nothing"
    stream = torch.cuda.Stream()
    errors = []
    for i in range(CALLS):
        o = sets[i % 2][(i // 2) % 2]           # shape alternates every call, buffers every other call
        o.c.fill_(float("nan"))
        ws.fill_(0xA5)                            # garbage: the call must set up what it reads
        torch.cuda.synchronize()
        status = enqueue(kernel, o, ws, stream)
        assert status == 0, (case.key, i, status)
        wait(torch, stream)
        errors.append(rel_error(torch, o))
    assert max(errors) <= TOLERANCE, (case.key, errors)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_first_calls_from_several_threads_at_once(libraries, case, tmp_path):
    import torch
    kernel = kernel_of(libraries, case, tmp_path)          # fresh: the attributes are not set yet
    p = Problem.parse(case.shapes[0])
    threads_n, calls = 8, 6
    shared = operands(torch, p, seed=7)
    outs = [torch.empty_like(shared.c) for _ in range(threads_n)]
    wss = [workspace_for(torch, kernel, [p])[0] for _ in range(threads_n)]
    streams = [torch.cuda.Stream() for _ in range(threads_n)]
    torch.cuda.synchronize()
    start = threading.Barrier(threads_n)
    statuses: list = [None] * threads_n

    def worker(t: int) -> None:
        torch.cuda.set_device(0)
        o = Operands(p, shared.a, shared.w, outs[t], shared.ref)
        start.wait()
        statuses[t] = [enqueue(kernel, o, wss[t], streams[t]) for _ in range(calls)]

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for s in streams:
        wait(torch, s)
    assert all(st == [0] * calls for st in statuses), statuses
    errors = [rel_error(torch, Operands(p, shared.a, shared.w, out, shared.ref)) for out in outs]
    assert max(errors) <= TOLERANCE, (case.key, errors)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_a_first_call_inside_graph_capture_replays_right(libraries, case, tmp_path):
    import torch
    kernel = kernel_of(libraries, case, tmp_path)          # fresh: its first call is captured
    p = Problem.parse(case.shapes[0])
    o = operands(torch, p, seed=11)
    ws, _ = workspace_for(torch, kernel, [p])
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    statuses = []
    with torch.cuda.graph(graph, capture_error_mode="relaxed"):   # as the GPU worker captures
        statuses.append(enqueue(kernel, o, ws, torch.cuda.current_stream()))
        statuses.append(enqueue(kernel, o, ws, torch.cuda.current_stream()))
    assert statuses == [0, 0], statuses
    for _ in range(3):
        o.c.fill_(float("nan"))
        ws.fill_(0xA5)
        torch.cuda.synchronize()
        graph.replay()
        wait(torch, torch.cuda.current_stream())
        assert rel_error(torch, o) <= TOLERANCE, case.key
    # and the same library, called directly after the capture
    o.c.fill_(float("nan"))
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    assert enqueue(kernel, o, ws, stream) == 0
    wait(torch, stream)
    assert rel_error(torch, o) <= TOLERANCE, case.key
