"""skinny_mma with k_interleave (and the L2 prefetch hint of X's loads) against the blocked K splits and torch.
Names: <config><b|i><hint>: b blocked (today), i interleaved; hint 256 (today), 128, none. Runtime cluster_k 1-8."""
import ctypes, glob, json, math, statistics, sys, time
import torch
R = 20
libs = {}
for f in sorted(glob.glob('*.so')):
    l = ctypes.CDLL('./' + f)
    l.evogemm_run.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 4 + [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    l.evogemm_can_implement.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p, ctypes.c_int]
    libs[f[:-3]] = l

def graph_of(fn):
    g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn(0, s.cuda_stream); torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            for r in range(R): fn(r, s.cuda_stream)
    return g

def time_graphs(graphs, rounds, warm_s):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    t0 = time.time()
    while time.time() - t0 < warm_s:
        for g in graphs.values(): g.replay()
        torch.cuda.synchronize()
    times = {k: [] for k in graphs}
    for _ in range(rounds):
        for name, g in graphs.items():
            g.replay(); ev[0].record()
            for _ in range(5): g.replay()
            ev[1].record(); ev[1].synchronize()
            times[name].append(ev[0].elapsed_time(ev[1]) * 1000 / (5 * R))
    return {k: (statistics.median(v), (max(v) - min(v)) / statistics.median(v)) for k, v in times.items()}

res = {}
for shape in sys.argv[2].split(','):
    M, N, K = map(int, shape.split('x'))
    sets = max(3, math.ceil(150e6 / (M * K * 2 + N * K * 2)))
    A = [torch.randn(M, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    W = [torch.randn(N, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    WT = [w.t().contiguous() for w in W]
    C = [torch.empty(M, N, device='cuda', dtype=torch.half) for _ in range(sets)]
    ref = A[0].float() @ W[0].float().t()
    graphs = {'torch_linear': graph_of(lambda r, s: torch.mm(A[r % sets], W[r % sets].t(), out=C[r % sets])),
              'torch_nn': graph_of(lambda r, s: torch.mm(A[r % sets], WT[r % sets], out=C[r % sets]))}
    errs = {}
    for name, l in libs.items():
        for ck in (1, 2, 4, 8):
            kn = (ctypes.c_int32 * 1)(ck)
            if l.evogemm_can_implement(M, N, K, kn, 1) != 0: continue
            C[0].fill_(float('nan'))
            st = l.evogemm_run(M, N, K, A[0].data_ptr(), W[0].data_ptr(), C[0].data_ptr(), None, 0, kn, 1, torch.cuda.current_stream().cuda_stream)
            torch.cuda.synchronize()
            err = ((C[0].float() - ref).norm() / ref.norm()).item() if st == 0 else float('inf')
            errs[f'{name}/k{ck}'] = err
            if not err < 1e-3:
                print('WRONG', shape, name, ck, st, err, flush=True); continue
            graphs[f'{name}/k{ck}'] = graph_of(lambda r, s, l=l, kn=kn: l.evogemm_run(M, N, K, A[r % sets].data_ptr(), W[r % sets].data_ptr(), C[r % sets].data_ptr(), None, 0, kn, 1, s))
    t = time_graphs(graphs, 3, 0.5)
    cands = sorted((k for k in t if not k.startswith('torch')), key=lambda k: t[k][0])
    base = [k for k in cands if 'b256' in k][:2]
    new = [k for k in cands if 'b256' not in k][:5]
    tf = time_graphs({k: graphs[k] for k in ['torch_linear', 'torch_nn'] + base + new}, 15, 1.0)
    vend = min(tf['torch_linear'][0], tf['torch_nn'][0])
    res[shape] = {'screen': {k: round(v[0], 3) for k, v in sorted(t.items(), key=lambda kv: kv[1][0])},
                  'focus': {k: [round(v[0], 3), round(v[1], 4)] for k, v in tf.items()}, 'errs': errs}
    print(f'== {shape} vendor {vend:.2f}', flush=True)
    for k, (us, sp) in sorted(tf.items(), key=lambda kv: kv[1][0]):
        print(f'   {k:16s} {us:7.2f} us spread {sp * 100:4.1f}%  vendor/this {vend / us:.3f}', flush=True)
    json.dump(res, open(sys.argv[1], 'w'), indent=1)
