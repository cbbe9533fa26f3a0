"""The L2 prefetch hint of the streamed loads: the same patterns built with .L2::256B / 128B / 64B / none."""
import ctypes, json, math, sys
import torch
import importlib.util
_spec = importlib.util.spec_from_file_location('patpy', 'pat.py')
_m = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_m)
graph_of, time_graphs, proto = _m.graph_of, _m.time_graphs, _m.proto
libs = {}
for h in ('256', 'none', '128', '64'):
    a = ctypes.CDLL(f'./pat_{h}.so'); a.pattern.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 7 + [ctypes.c_void_p, ctypes.c_void_p]
    b = ctypes.CDLL(f'./pat2_{h}.so'); b.pattern2.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 8 + [ctypes.c_void_p, ctypes.c_void_p]
    libs[h] = (a, b)
res = {}
for shape in sys.argv[2].split(','):
    R, P = map(int, shape.split('x'))
    sets = max(3, math.ceil(150e6 / (R * P)))
    X = [torch.empty(R * P, device='cuda', dtype=torch.uint8).random_() for _ in range(sets)]
    out = torch.zeros(4, device='cuda', dtype=torch.int32)
    graphs = {'read': graph_of(lambda r, s: proto.read_stream_launch(X[r % sets].data_ptr(), R * P, out.data_ptr(), 1056, 256, s))}
    for h, (a, b) in libs.items():
        for rt, kwl, D, ks in ((16, 6, 4, 8), (16, 7, 2, 8), (16, 6, 2, 4), (16, 7, 4, 4), (8, 8, 2, 8), (1, 10, 2, 8), (4, 9, 2, 4)):
            graphs[f'{h}/rt{rt}_kw{1 << kwl}_D{D}_ks{ks}'] = graph_of(
                lambda r, s, a=a, rt=rt, kwl=kwl, D=D, ks=ks: a.pattern(X[r % sets].data_ptr(), R, P, rt, kwl, ks, D, 256, out.data_ptr(), s))
        for rt, kwl, D, mode, wps in ((16, 6, 4, 1, 32), (8, 9, 1, 1, 32), (16, 8, 1, 1, 32), (16, 7, 4, 0, 16), (1, 10, 4, 1, 32)):
            grid = 132 * wps * 32 // 256
            graphs[f'{h}/m{mode}_rt{rt}_kw{1 << kwl}_D{D}_w{wps}'] = graph_of(
                lambda r, s, b=b, rt=rt, kwl=kwl, D=D, mode=mode, grid=grid: b.pattern2(X[r % sets].data_ptr(), R, P, rt, kwl, mode, D, grid, 256, out.data_ptr(), s))
    t = time_graphs(graphs, 5, 0.5)
    res[shape] = t
    print(f'== {shape}: read {t["read"]:.2f}', flush=True)
    pats = sorted({k.split('/')[1] for k in t if '/' in k})
    print('   ' + ' ' * 24 + ''.join(f'{h:>9s}' for h in libs), flush=True)
    for p in pats:
        print(f'   {p:24s}' + ''.join(f'{t[f"{h}/{p}"]:9.2f}' for h in libs), flush=True)
    json.dump(res, open(sys.argv[1], 'w'), indent=1)
