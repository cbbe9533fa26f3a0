"""Time ablated kernels (ablations are not correct GEMMs) in back-to-back graph replay: NODES calls a graph, each on
its own input set, L2 flushed (512 MB written) before each replay, variants interleaved round by round."""
import json, sys, statistics
from pathlib import Path
import torch
from evaluator.kernel_abi import EvoKernel

cache = Path(sys.argv[1]); libs = json.loads(Path(".kc/s60/abl/libs.map").read_text())
SHAPE = {"9a567b67": (64, 64, 4096), "ae53e10f": (128, 128, 128)}
NODES, ROUNDS = 40, 30
flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
graphs = {}
for name, e in sorted(libs.items()):
    m, n, k = SHAPE[name.split("-")[0]]
    kern = EvoKernel(str(cache / e["lib"]), e["knobs"])
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half), torch.randn(n, k, device="cuda", dtype=torch.half),
             torch.empty(m, n, device="cuda", dtype=torch.half)) for _ in range(NODES)]
    ws = torch.empty(max(kern.workspace_size(m, n, k), 256), dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    def node(i, kern=kern, sets=sets, m=m, n=n, k=k, ws=ws):
        a, w, c = sets[i]
        rc = kern.lib.evogemm_run(m, n, k, a.data_ptr(), w.data_ptr(), c.data_ptr(), ws.data_ptr(), ws.numel(),
                                  kern.knobs_ptr, kern.n_knobs, torch.cuda.current_stream().cuda_stream)
        assert rc == 0, (name, rc)
    with torch.cuda.stream(s):
        for i in range(NODES): node(i)
    torch.cuda.synchronize()
    if name.endswith(("-full", "-push", "-peer", "-mpush")):
        a, w, c = sets[0]; ref = a.float() @ w.float().t()
        print(name, "rel error", ((c.float() - ref).norm() / ref.norm()).item())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for i in range(NODES): node(i)
    graphs[name] = (g, sets)
for (m, n, k) in set(SHAPE.values()):
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half), torch.randn(n, k, device="cuda", dtype=torch.half)) for _ in range(NODES)]
    g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(NODES): torch.matmul(sets[i][0], sets[i][1].t())
    torch.cuda.synchronize()
    with torch.cuda.graph(g, stream=s):
        for i in range(NODES): torch.matmul(sets[i][0], sets[i][1].t())
    graphs[f"torch-{m}x{n}x{k}"] = (g, sets)
times = {n: [] for n in graphs}
for r in range(ROUNDS):
    for name, (g, _) in graphs.items():
        flush.fill_(r & 0xff)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        times[name].append(a.elapsed_time(b) * 1000 / NODES)
res = {n: {"median_us": statistics.median(t), "min_us": min(t), "max_us": max(t)} for n, t in times.items()}
for n, v in res.items(): print(f"{n:28s} {v['median_us']:7.3f} us  ({v['min_us']:.3f}-{v['max_us']:.3f})")
json.dump({"gpu": torch.cuda.get_device_name(), "results": res}, open(sys.argv[2], "w"), indent=1)
