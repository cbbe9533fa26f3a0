"""Screen the skinny_bulk prototype (proto.cu) against torch (cuBLAS) at decode shapes, and measure the read
ceiling in the same harness: graph replay of R back-to-back calls over rotated inputs (>= 150 MB), device time
by CUDA events around whole replays, candidates interleaved round by round, median of rounds."""
import ctypes, json, math, statistics, sys
import torch
import torch.nn.functional as F

lib = ctypes.CDLL(sys.argv[1])
out_path = sys.argv[2]
shapes = sys.argv[3].split(',')
CFGS = [n for n in ('b32_512_4_2_16 b32_512_4_4_16 b32_256_6_2_16 b32_256_8_2_16 b16_512_4_4_16 b16_256_4_4_16 '
                    'b64_256_4_1_16 b64_256_4_2_16 b64_128_8_2_16 b32_512_4_2_16_ef b32_256_6_2_16_ef '
                    'b32_512_4_2_8 b64_256_4_2_8 b32_512_4_2_16_nc b32_256_6_2_16_nc b16_512_4_4_16_nc').split()]
for n in CFGS:
    getattr(lib, n).argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_void_p]
lib.read_stream_launch.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_void_p]
R = 20
dev = torch.cuda.get_device_properties(0)
print(dev.name, dev.multi_processor_count, torch.__version__, flush=True)


def graph_of(fn):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn(0, s.cuda_stream)
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            for r in range(R):
                fn(r, s.cuda_stream)
    return g


def time_graphs(graphs, rounds, warm_s=0.5):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    # warm-up: about warm_s seconds of replays
    import time
    t0 = time.time()
    while time.time() - t0 < warm_s:
        for g in graphs.values():
            g.replay()
        torch.cuda.synchronize()
    times = {k: [] for k in graphs}
    for _ in range(rounds):
        for name, g in graphs.items():
            g.replay()
            ev[0].record()
            for _ in range(5):
                g.replay()
            ev[1].record()
            ev[1].synchronize()
            times[name].append(ev[0].elapsed_time(ev[1]) * 1000 / (5 * R))
    return {k: (statistics.median(v), (max(v) - min(v)) / statistics.median(v)) for k, v in times.items()}


res = {}
for shape in shapes:
    M, N, K = map(int, shape.split('x'))
    xbytes = max(M, N) * K * 2
    sets = max(3, math.ceil(150e6 / (M * K * 2 + N * K * 2)))
    A = [torch.randn(M, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    W = [torch.randn(N, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    WT = [w.t().contiguous() for w in W]
    C = [torch.empty(M, N, device='cuda', dtype=torch.half) for _ in range(sets)]
    flag = torch.zeros(4, device='cuda', dtype=torch.int32)
    ref = A[0].float() @ W[0].float().t()
    graphs, errs = {}, {}
    graphs['torch_linear'] = graph_of(lambda r, s: torch.mm(A[r % sets], W[r % sets].t(), out=C[r % sets]))
    graphs['torch_nn'] = graph_of(lambda r, s: torch.mm(A[r % sets], WT[r % sets], out=C[r % sets]))
    X = A if M > N else W
    for blocks, threads in ((264, 512), (528, 512), (1056, 256), (264, 1024)):
        graphs[f'read_{blocks}x{threads}'] = graph_of(
            lambda r, s, b=blocks, t=threads: lib.read_stream_launch(X[r % sets].data_ptr(), xbytes, flag.data_ptr(), b, t, s))
    for n in CFGS:
        for ks in (1, 2, 4, 8):
            f = getattr(lib, n)
            C[0].zero_()
            st = f(M, N, K, A[0].data_ptr(), W[0].data_ptr(), C[0].data_ptr(), ks, torch.cuda.current_stream().cuda_stream)
            torch.cuda.synchronize()
            if st != 0:
                continue
            err = ((C[0].float() - ref).norm() / ref.norm()).item()
            name = f'{n}/k{ks}'
            errs[name] = err
            if not n.endswith('_nc') and not err < 1e-3:
                print('WRONG', shape, name, err, flush=True)
                continue
            graphs[name] = graph_of(lambda r, s, f=f, ks=ks: f(M, N, K, A[r % sets].data_ptr(), W[r % sets].data_ptr(),
                                                                 C[r % sets].data_ptr(), ks, s))
    t = time_graphs(graphs, 3, 0.5)
    ref_us = min(t['torch_linear'][0], t['torch_nn'][0])
    cands = sorted((k for k in t if '/' in k and not k.split('/')[0].endswith('_nc')), key=lambda k: t[k][0])[:5]
    reads = sorted((k for k in t if k.startswith('read') or '_nc' in k), key=lambda k: t[k][0])[:3]
    focus = {k: graphs[k] for k in ['torch_linear', 'torch_nn'] + cands + reads}
    tf = time_graphs(focus, 15, 1.0)
    vend = min(tf['torch_linear'][0], tf['torch_nn'][0])
    row = {'screen': {k: round(v[0], 3) for k, v in sorted(t.items(), key=lambda kv: kv[1][0])},
           'focus': {k: [round(v[0], 3), round(v[1], 4)] for k, v in tf.items()}, 'errs': errs,
           'xbytes': xbytes}
    res[shape] = row
    print(f'== {shape}  X {xbytes / 1e6:.1f} MB  vendor {vend:.2f} us', flush=True)
    for k, (us, sp) in sorted(tf.items(), key=lambda kv: kv[1][0]):
        print(f'   {k:28s} {us:8.2f} us  spread {sp * 100:4.1f}%  {xbytes / us / 1e6:5.2f} TB/s  '
              f'vendor/this {vend / us:.3f}', flush=True)
    json.dump(res, open(out_path, 'w'), indent=1)
