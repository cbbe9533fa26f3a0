"""Back-to-back graph replay of one GEMM, inputs warm in L2 (one A/W pair) or cold (rotated over >= 3x L2).

python warmcold.py OUT.json SHAPE:name=LIB@KNOBS,... ...   ('torch' as LIB: torch.matmul(A, W.T))
Each (shape, kernel, warm|cold) is a CUDA graph of 20 calls; the graphs of a shape are replayed in turn,
15 rounds; the figure is the median over rounds of graph time / 20.
"""
import json
import sys

import torch

from evaluator.kernel_abi import EvoKernel

CALLS, ROUNDS, L2 = 20, 15, 50 * 2**20
out = {}
for arg in sys.argv[2:]:
    shape, spec = arg.split(":", 1)
    m, n, k = (int(x) for x in shape.split("x"))
    pair = 2 * (m * k + n * k)
    sets = max(2, -(-3 * L2 // pair))
    As = [torch.randn(m, k, device="cuda", dtype=torch.float16) for _ in range(sets)]
    Ws = [torch.randn(n, k, device="cuda", dtype=torch.float16) for _ in range(sets)]
    Cs = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in range(sets)]
    graphs = {}
    for item in spec.split(","):
        name, lib = item.split("=", 1)
        if lib == "torch":
            def call(i):
                torch.matmul(As[i], Ws[i].t(), out=Cs[i])
        else:
            path, _, knobs = lib.partition("@")
            kern = EvoKernel(path, [int(x) for x in knobs.split(";")] if knobs else [])
            wsb = kern.workspace_size(m, n, k)
            ws = torch.empty(max(wsb, 1), device="cuda", dtype=torch.uint8)

            def call(i, kern=kern, ws=ws, wsb=wsb):
                rc = kern.lib.evogemm_run(m, n, k, As[i].data_ptr(), Ws[i].data_ptr(), Cs[i].data_ptr(), ws.data_ptr(),
                                          wsb, kern.knobs_ptr, kern.n_knobs, torch.cuda.current_stream().cuda_stream)
                assert rc == 0, rc
        for mode in ("warm", "cold"):
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for i in range(3):
                    call(i % sets)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for i in range(CALLS):
                    call(0 if mode == "warm" else i % sets)
            graphs[(name, mode)] = g
    times = {key: [] for key in graphs}
    for key, g in graphs.items():  # warm-up
        for _ in range(5):
            g.replay()
    torch.cuda.synchronize()
    for _ in range(ROUNDS):
        for key, g in graphs.items():
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(); g.replay(); e1.record(); e1.synchronize()
            times[key].append(e0.elapsed_time(e1) * 1000 / CALLS)
    res = {f"{n}/{m}": sorted(v)[len(v) // 2] for (n, m), v in times.items()}
    out[shape] = res
    print(shape, " ".join(f"{k} {v:.2f}" for k, v in res.items()), flush=True)
    del As, Ws, Cs, graphs
    torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
