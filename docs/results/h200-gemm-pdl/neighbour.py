"""gemm_pdl after a foreign kernel: graph replay of R calls of a kernel (and of its gemm_pdl twin), each call
alone or right after a vendor GEMM or an elementwise op; the predecessor alone is timed too, so
(pair - predecessor) is what the kernel adds to a stream of other work. Device time per call by CUDA events
over whole graph replays, rounds interleaved, median over rounds."""
import json, statistics, sys
from pathlib import Path
import torch
sys.path.insert(0, '.')
from genome import Genome
from evaluator.compile import Compiler
from evaluator.kernel_abi import EvoKernel

hall, cache, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
shapes = sys.argv[4].split(',')
R, ROUNDS, SETS = 20, 12, 4
comp = Compiler.default(cache)
res = {}
for shape in shapes:
    M, N, K = map(int, shape.split('x'))
    entries = json.load(open(hall / 'hall_of_fame' / f'{shape}.json'))
    orig, twin = (Genome.from_dict(e['genome']) for e in entries[:2])
    ks = {}
    for name, g in (('base', orig), ('pdl', twin)):
        b = comp.build(g)
        assert b.ok and b.cached, (g.id, b.reason)
        ks[name] = EvoKernel(b.library, b.knobs)
    A = [torch.randn(M, K, device='cuda', dtype=torch.half) for _ in range(SETS)]
    W = [torch.randn(N, K, device='cuda', dtype=torch.half) for _ in range(SETS)]
    C = [torch.empty(M, N, device='cuda', dtype=torch.half) for _ in range(SETS)]
    wsb = max(k.workspace_size(M, N, K) for k in ks.values())
    ws = torch.empty(max(wsb, 16), device='cuda', dtype=torch.uint8)
    P1, P2, PO = (torch.randn(1024, 1024, device='cuda', dtype=torch.half) for _ in range(3))
    E = torch.randn(4 << 20, device='cuda', dtype=torch.half)
    preds = {'none': None, 'mm': lambda: torch.mm(P1, P2, out=PO), 'ew': lambda: E.mul_(1.0)}
    ref = A[0].float() @ W[0].float().t()
    for name, k in ks.items():
        s = torch.cuda.current_stream().cuda_stream
        assert k.run(M, N, K, A[0].data_ptr(), W[0].data_ptr(), C[0].data_ptr(), ws.data_ptr(), wsb, s) == 0
        torch.cuda.synchronize()
        err = ((C[0].float() - ref).norm() / ref.norm()).item()
        assert err < 1e-3, (shape, name, err)
    graphs = {}
    for pname, pred in preds.items():
        for kname in ('base', 'pdl', None):
            if kname is None and pred is None: continue
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                if pred: pred()   # warm the vendor's handles outside the capture
                torch.cuda.synchronize()
                with torch.cuda.graph(g, stream=s):
                    for r in range(R):
                        if pred: pred()
                        if kname:
                            st = ks[kname].run(M, N, K, A[r % SETS].data_ptr(), W[r % SETS].data_ptr(),
                                               C[r % SETS].data_ptr(), ws.data_ptr(), wsb, s.cuda_stream)
                            assert st == 0, st
            graphs[f'{pname}/{kname or "alone"}'] = g
    for g in graphs.values():
        for _ in range(30): g.replay()
    torch.cuda.synchronize()
    times = {k: [] for k in graphs}
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for _ in range(ROUNDS):
        for name, g in graphs.items():
            for _ in range(3): g.replay()
            ev[0].record(); 
            for _ in range(10): g.replay()
            ev[1].record(); ev[1].synchronize()
            times[name].append(ev[0].elapsed_time(ev[1]) * 1000 / (10 * R))
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {'ids': {'base': orig.id, 'pdl': twin.id}, 'us_per_call': med}
    for p in ('mm', 'ew'):
        for kname in ('base', 'pdl'):
            row[f'added_after_{p}/{kname}'] = med[f'{p}/{kname}'] - med[f'{p}/alone']
    res[shape] = row
    print(shape, json.dumps({k: round(v, 3) for k, v in med.items()}), flush=True)
    print('   added after mm: base %.3f pdl %.3f | after ew: base %.3f pdl %.3f' % (
        row['added_after_mm/base'], row['added_after_mm/pdl'], row['added_after_ew/base'], row['added_after_ew/pdl']),
        flush=True)
out.mkdir(parents=True, exist_ok=True)
(out / 'neighbour.json').write_text(json.dumps(res, indent=1) + '\n')
