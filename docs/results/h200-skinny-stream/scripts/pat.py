import ctypes, json, math, statistics, sys, time
import torch
R_CALLS = 20
lib = ctypes.CDLL('./pat.so')
lib.pattern.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 7 + [ctypes.c_void_p, ctypes.c_void_p]
proto = ctypes.CDLL('../proto.so')
proto.read_stream_launch.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
ALLOWED = {(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4), (8, 1), (8, 2), (16, 1), (16, 2), (32, 1)}

def graph_of(fn):
    g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert fn(0, s.cuda_stream) == 0; torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            for r in range(R_CALLS): fn(r, s.cuda_stream)
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
            for _ in range(4): g.replay()
            ev[1].record(); ev[1].synchronize()
            times[name].append(ev[0].elapsed_time(ev[1]) * 1000 / (4 * R_CALLS))
    return {k: statistics.median(v) for k, v in times.items()}

def main():
    res = {}
    for shape in sys.argv[2].split(','):
        R, P = map(int, shape.split('x'))   # rows, row bytes
        sets = max(3, math.ceil(150e6 / (R * P)))
        X = [torch.empty(R * P, device='cuda', dtype=torch.uint8).random_() for _ in range(sets)]
        out = torch.zeros(4, device='cuda', dtype=torch.int32)
        graphs = {'read': graph_of(lambda r, s: proto.read_stream_launch(X[r % sets].data_ptr(), R * P, out.data_ptr(), 1056, 256, s))}
        for rt in (16, 8, 4, 2, 1):
            for kwl in range(5, 13):
                kw = 1 << kwl
                L = rt * kw // 512
                for D in (1, 2, 4):
                    if (L, D) not in ALLOWED: continue
                    for ks in (1, 2, 4, 8):
                        warps = math.ceil(R / rt) * ks
                        if warps < 264 or warps > 132 * 64 * 4: continue
                        graphs[f'rt{rt}_kw{kw}_D{D}_ks{ks}'] = graph_of(
                            lambda r, s, rt=rt, kwl=kwl, D=D, ks=ks: lib.pattern(X[r % sets].data_ptr(), R, P, rt, kwl, ks, D, 256, out.data_ptr(), s))
        t = time_graphs(graphs, 3, 0.5)
        top = sorted(t, key=t.get)
        res[shape] = t
        gb = R * P / 1e3
        print(f'== {shape} ({R * P / 1e6:.1f} MB): read {t["read"]:.2f} us; {len(t)} patterns', flush=True)
        for k in top[:14]:
            print(f'   {k:24s} {t[k]:7.2f} us {gb / t[k] / 1e3:5.2f} TB/s', flush=True)
        for rt in (16, 8, 4, 1):
            best = min((k for k in t if k.startswith(f'rt{rt}_')), key=t.get)
            print(f'   best rt{rt}: {best} {t[best]:.2f}', flush=True)
        for kw in (64, 128, 256, 512, 1024):
            ks = [k for k in t if k.startswith(f'rt16_kw{kw}_')]
            if ks:
                best = min(ks, key=t.get); print(f'   best rt16 kw{kw}: {best} {t[best]:.2f}', flush=True)
        json.dump(res, open(sys.argv[1], 'w'), indent=1)

if __name__ == '__main__':
    main()
