"""`evogemm bench --kernels PKG` on an exported package: the package's `hgemm` op measured as a
user calls it, against torch.matmul, in one process on one GPU.

Per shape (the package's dispatched shapes, plus any --shapes, which show the fallback):
- correctness: hgemm's output against the fp32 reference (relative error; the gate's 1e-3);
- device time: a CUDA graph of one call per input set (sets rotated through more than 3x the L2),
  each call after the previous one has completed, replayed and timed with events, hgemm and
  torch.matmul alternating round by round; the ratio is the median of the per-round ratios;
- call latency: wall time of one synchronised eager call from Python (output allocation and
  dispatch included), hgemm and torch.matmul alternating;
- host time: what one call costs the CPU (back-to-back calls without synchronisation).
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

L2_BYTES = 60 * 2**20  # rotate through at least 3x this (H200: 50 MiB L2)


def is_package(path: "str | Path") -> bool:
    path = Path(path)
    return (path / "pyproject.toml").is_file() and any(path.glob("*/dispatch.json"))


def import_package(path: "str | Path"):
    path = Path(path).resolve()
    names = [p.parent.name for p in path.glob("*/dispatch.json")]
    if len(names) != 1:
        raise ValueError(f"{path}: expected one package folder with a dispatch.json, found {names}")
    sys.path.insert(0, str(path))
    return importlib.import_module(names[0])


REPLAYS = 3  # graph replays per timed sample


def _capture(torch, fn: Callable[[Any, Any], Any], sets) -> "tuple[Any, int]":
    """A CUDA graph of one call of `fn` per input set, each call after the previous one has completed (as
    the GPU worker times kernels: a programmatic dependent launch would otherwise overlap its own previous
    call; evaluator/worker_cuda.full_dependencies), and how many edges between calls that changed."""
    from cuda.bindings import runtime as rt
    from evaluator.worker_cuda import capture_calls, full_dependencies
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for a, w in sets:  # warm-up outside the capture (lazy loading, cuBLAS handles)
            fn(a, w)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    try:
        graph = torch.cuda.CUDAGraph(keep_graph=True)  # instantiated below, after its edges are set
    except TypeError as exc:  # torch before keep_graph (2.8): the graph cannot be edited before it is instantiated
        raise RuntimeError(f"the package bench needs torch >= 2.8 (CUDAGraph keep_graph); this is "
                           f"{torch.__version__}") from exc
    with torch.cuda.graph(graph):
        tails = capture_calls(rt, torch.cuda.current_stream().cuda_stream, lambda i: fn(*sets[i]), len(sets))
    made_full = full_dependencies(rt, rt.cudaGraph_t(graph.raw_cuda_graph()), tails)
    graph.instantiate()
    return graph, made_full


def _time_graph(torch, graph, calls: int, replays: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return 1000.0 * start.elapsed_time(end) / (calls * replays)


def bench_shape(torch, pkg, m: int, n: int, k: int, rounds: int = 30, call_samples: int = 200) -> dict[str, Any]:
    served = (m, n, k) in pkg.DISPATCH.shapes and (m, n, k) in pkg.DISPATCH.table(
        torch, torch.cuda.current_device()).served
    per_set = 2 * (m * k + n * k + m * n)
    n_sets = max(1, min(64, -(-3 * L2_BYTES // per_set)))
    gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
    sets = [(torch.randn(m, k, generator=gen, device="cuda").half(),
             torch.randn(n, k, generator=gen, device="cuda").half()) for _ in range(n_sets)]
    a, w = sets[0]
    ref = a.float() @ w.float().t()
    out = pkg.hgemm(a, w).float()
    rel = float(torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref))

    def vendor(x, y):
        return torch.matmul(x, y.t())

    (g_op, full_op), (g_ref, full_ref) = _capture(torch, pkg.hgemm, sets), _capture(torch, vendor, sets)
    reps = REPLAYS
    for _ in range(3):
        _time_graph(torch, g_op, n_sets, reps), _time_graph(torch, g_ref, n_sets, reps)
    op_us, ref_us, ratios = [], [], []
    for _ in range(rounds):
        r = _time_graph(torch, g_ref, n_sets, reps)
        o = _time_graph(torch, g_op, n_sets, reps)
        op_us.append(o), ref_us.append(r), ratios.append(r / o)
    call_op, call_ref = [], []
    for i in range(call_samples):
        x, y = sets[i % n_sets]
        for fn, bucket in ((pkg.hgemm, call_op), (vendor, call_ref)):
            torch.cuda.synchronize()
            t = time.perf_counter()
            fn(x, y)
            torch.cuda.synchronize()
            bucket.append(1e6 * (time.perf_counter() - t))
    host_op, host_ref = _host_us(torch, pkg.hgemm, a, w), _host_us(torch, vendor, a, w)
    del g_op, g_ref
    med = statistics.median
    return {"shape": f"{m}x{n}x{k}", "served": served, "rel_error": rel,
            "device_us": med(op_us), "torch_device_us": med(ref_us), "speedup": med(ratios),
            "speedup_low": min(ratios), "speedup_high": max(ratios),
            "call_us": med(call_op), "torch_call_us": med(call_ref),
            "call_ratio": med(call_ref) / med(call_op), "host_us": host_op, "torch_host_us": host_ref,
            "input_sets": n_sets, "rounds": rounds, "full_edges": full_op, "torch_full_edges": full_ref}


def _host_us(torch, fn, a, w, calls: int = 400, rounds: int = 5) -> float:
    """Host time of one call: back-to-back calls without synchronisation (the GPU queue absorbs
    them), the best of a few rounds, per call."""
    best = float("inf")
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            fn(a, w)
        best = min(best, (time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    return best


def run(package: "str | Path", shapes: Sequence[tuple[int, int, int]], out: Path,
        progress: Callable[[str], None] = print) -> dict[str, Any]:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("bench of an exported package needs a CUDA GPU (none here)")
    pkg = import_package(package)
    report = pkg.load()
    progress(f"{pkg.__name__}: {json.dumps(report)}")
    todo = sorted(set(pkg.DISPATCH.shapes) | set(shapes))
    rows = []
    for m, n, k in todo:
        row = bench_shape(torch, pkg, m, n, k)
        rows.append(row)
        progress(f"{row['shape']}: {'kernel' if row['served'] else 'fallback'} {row['device_us']:.2f} us vs "
                 f"torch.matmul {row['torch_device_us']:.2f} us ({row['speedup']:.3f}x); call {row['call_us']:.1f} "
                 f"vs {row['torch_call_us']:.1f} us; host {row['host_us']:.1f} vs {row['torch_host_us']:.1f} us; rel error {row['rel_error']:.2e}")
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": "evogemm " + " ".join(sys.argv[1:]), "device": torch.cuda.get_device_name(),
            "torch": torch.__version__, "package": str(Path(package).resolve()), "load": report}
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench-package.json").write_text(json.dumps({"meta": meta, "shapes": rows}, indent=1))
    lines = [f"# {pkg.__name__}: exported op against torch.matmul", "", f"{meta['date']}, {meta['device']}, "
             f"torch {meta['torch']}. Device time: CUDA-graph replay over {L2_BYTES * 3 // 2**20}+ MiB of rotated "
             "inputs, each call after the previous one has completed, alternating rounds; call: one synchronised "
             "eager call.", "",
             "| shape | served by | device us | torch us | speedup (min-max) | call us | torch call us | host us | torch host us "
             "| rel error |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {'kernel' if r['served'] else 'torch.matmul'} | {r['device_us']:.2f} | "
                     f"{r['torch_device_us']:.2f} | {r['speedup']:.3f} ({r['speedup_low']:.3f}-{r['speedup_high']:.3f}) "
                     f"| {r['call_us']:.1f} | {r['torch_call_us']:.1f} | {r['host_us']:.1f} | {r['torch_host_us']:.1f} "
                     f"| {r['rel_error']:.2e} |")
    (out / "bench-package.md").write_text("\n".join(lines) + "\n")
    return {"meta": meta, "shapes": rows}
