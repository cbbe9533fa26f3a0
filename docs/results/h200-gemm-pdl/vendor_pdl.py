"""Does the vendor gain from its own programmatic dependent launches back to back? torch.matmul (cuBLAS)
captured R calls a graph, rotating 4 input sets, twice: as captured, and with the programmatic edges from
each call's last node to the next call made full (evaluator/worker_cuda.full_dependencies, as the bench now
times). Both timed in interleaved rounds; median us per call."""
import json, statistics, sys
import torch
sys.path.insert(0, '.')
from evaluator.worker_cuda import Cuda, _ok, full_dependencies

shapes, out = sys.argv[1].split(','), sys.argv[2]
R, ROUNDS = 40, 15
cuda = Cuda(); rt = cuda.rt
ext = torch.cuda.ExternalStream(cuda.stream_ptr)
res = {}
for shape in shapes:
    M, N, K = map(int, shape.split('x'))
    sets = [(torch.randn(M, K, device='cuda', dtype=torch.half), torch.randn(N, K, device='cuda', dtype=torch.half),
             torch.empty(M, N, device='cuda', dtype=torch.half)) for _ in range(4)]
    def call(i):
        a, w, c = sets[i % 4]
        torch.matmul(a, w.t(), out=c)
    with torch.cuda.stream(ext):
        call(0); torch.cuda.synchronize()
        graphs = {}
        for mode in ('as_captured', 'full'):
            _ok(rt.cudaStreamBeginCapture(cuda.stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed), 'begin')
            tails = set()
            for i in range(R):
                call(i)
                _, _, _, deps, _, n = _ok(rt.cudaStreamGetCaptureInfo(cuda.stream), 'info')
                tails.update(int(x) for x in deps[:n])
            graph = _ok(rt.cudaStreamEndCapture(cuda.stream), 'end')
            _, _, _, edges = _ok(rt.cudaGraphGetEdges(graph), 'edges')
            _, _, data, edges = _ok(rt.cudaGraphGetEdges(graph, edges), 'edges')
            prog = sum(int(d.type) == 1 for d in data[:edges])
            made = full_dependencies(rt, graph, tails) if mode == 'full' else 0
            graphs[mode] = (_ok(rt.cudaGraphInstantiate(graph, 0), 'inst'), edges, prog, made)
    for exe, *_ in graphs.values():
        for _ in range(20): cuda.replay_ms(exe)
    t = {m: [] for m in graphs}
    for _ in range(ROUNDS):
        for m, (exe, *_) in graphs.items():
            t[m].append(cuda.replay_ms(exe) * 1000 / R)
    med = {m: statistics.median(v) for m, v in t.items()}
    res[shape] = {'us_per_call': med, 'edges': graphs['full'][1], 'programmatic': graphs['full'][2],
                  'made_full': graphs['full'][3], 'full_over_as_captured': med['full'] / med['as_captured']}
    print(shape, json.dumps(res[shape]), flush=True)
json.dump(res, open(out, 'w'), indent=1)
