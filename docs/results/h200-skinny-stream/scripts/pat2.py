"""Balanced patterns (pat2.cu) against the read ceiling and the best unbalanced ones of pat.py."""
import ctypes, json, math, sys
import torch
import importlib.util
_spec = importlib.util.spec_from_file_location('patpy', 'pat.py')
_m = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_m)
graph_of, time_graphs, lib, proto = _m.graph_of, _m.time_graphs, _m.lib, _m.proto
lib2 = ctypes.CDLL('./pat2.so')
lib2.pattern2.argtypes = [ctypes.c_void_p] + [ctypes.c_int] * 8 + [ctypes.c_void_p, ctypes.c_void_p]
ALLOWED = {(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4), (8, 1), (8, 2), (16, 1), (16, 2)}
res = {}
for shape in sys.argv[2].split(','):
    R, P = map(int, shape.split('x'))
    sets = max(3, math.ceil(150e6 / (R * P)))
    X = [torch.empty(R * P, device='cuda', dtype=torch.uint8).random_() for _ in range(sets)]
    out = torch.zeros(4, device='cuda', dtype=torch.int32)
    graphs = {'read': graph_of(lambda r, s: proto.read_stream_launch(X[r % sets].data_ptr(), R * P, out.data_ptr(), 1056, 256, s)),
              'unbal_rt16_kw64_D4_ks8': graph_of(lambda r, s: lib.pattern(X[r % sets].data_ptr(), R, P, 16, 6, 8, 4, 256, out.data_ptr(), s))}
    for rt in (16, 8, 1):
        for kwl in (6, 7, 8, 9, 10):
            L = rt * (1 << kwl) // 512
            for D in (1, 2, 4):
                if (L, D) not in ALLOWED: continue
                for mode in (0, 1, 2):
                    for wps, threads in ((16, 256), (32, 256), (8, 256)):
                        grid = 132 * wps * 32 // threads
                        graphs[f'm{mode}_rt{rt}_kw{1 << kwl}_D{D}_w{wps}'] = graph_of(
                            lambda r, s, rt=rt, kwl=kwl, D=D, mode=mode, grid=grid, threads=threads:
                            lib2.pattern2(X[r % sets].data_ptr(), R, P, rt, kwl, mode, D, grid, threads, out.data_ptr(), s))
    t = time_graphs(graphs, 3, 0.5)
    res[shape] = t
    print(f'== {shape}: read {t["read"]:.2f}  unbalanced best-of-pat {t["unbal_rt16_kw64_D4_ks8"]:.2f}; {len(t)} patterns', flush=True)
    for k in sorted(t, key=t.get)[:10]:
        print(f'   {k:26s} {t[k]:7.2f} us {R * P / t[k] / 1e6:5.2f} TB/s', flush=True)
    for mode in (0, 1, 2):
        for rt in (16, 8, 1):
            ks = [k for k in t if k.startswith(f'm{mode}_rt{rt}_')]
            b = min(ks, key=t.get)
            print(f'   best mode {mode} rt{rt}: {b} {t[b]:.2f}', flush=True)
    json.dump(res, open(sys.argv[1], 'w'), indent=1)
