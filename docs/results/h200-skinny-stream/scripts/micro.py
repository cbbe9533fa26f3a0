"""Decompose skinny_mma's time: the kernel as built (base), without Y's loads (NOY), without the mma (NOMMA,
the loaded words XOR-ed into the accumulator), without both; and the read ceiling (proto.so read_stream)."""
import ctypes, glob, json, math, statistics, sys, time
import torch
R = 20
libs = {}
for f in sorted(glob.glob('*.so')):
    if f == 'proto.so': continue
    l = ctypes.CDLL('./' + f)
    l.evogemm_run.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 4 + [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    libs[f[:-3]] = l
proto = ctypes.CDLL('../proto.so')
proto.read_stream_launch.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]

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
    return {k: statistics.median(v) for k, v in times.items()}

res = {}
for shape in sys.argv[2].split(','):
    M, N, K = map(int, shape.split('x'))
    sets = max(3, math.ceil(150e6 / (M * K * 2 + N * K * 2)))
    A = [torch.randn(M, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    W = [torch.randn(N, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    C = [torch.empty(M, N, device='cuda', dtype=torch.half) for _ in range(sets)]
    flag = torch.zeros(4, device='cuda', dtype=torch.int32)
    graphs = {'torch': graph_of(lambda r, s: torch.mm(A[r % sets], W[r % sets].t(), out=C[r % sets])),
              'read': graph_of(lambda r, s: proto.read_stream_launch(W[r % sets].data_ptr(), N * K * 2, flag.data_ptr(), 1056, 256, s))}
    for name, l in libs.items():
        for ck in (1, 2, 4):
            kn = (ctypes.c_int32 * 1)(ck)
            graphs[f'{name}/k{ck}'] = graph_of(lambda r, s, l=l, kn=kn: l.evogemm_run(M, N, K, A[r % sets].data_ptr(), W[r % sets].data_ptr(), C[r % sets].data_ptr(), None, 0, kn, 1, s))
    t = time_graphs(graphs, 9, 1.0)
    res[shape] = t
    print('==', shape, f"torch {t['torch']:.2f} read {t['read']:.2f}", flush=True)
    for cfg in sorted({k.split('_')[0] for k in libs}):
        for ck in (1, 2, 4):
            print(f'   {cfg} k{ck}: ' + '  '.join(f"{v} {t[f'{cfg}_{v}/k{ck}']:.2f}" for v in ('base', 'NOY', 'NOMMA', 'NOY_NOMMA') if f'{cfg}_{v}/k{ck}' in t), flush=True)
json.dump(res, open(sys.argv[1], 'w'), indent=1)
