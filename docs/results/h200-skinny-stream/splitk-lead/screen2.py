"""Screen genomes (built in the carried cache) against torch at some shapes: gate by relative error against an
fp32 product, then graph replay of R back-to-back calls over rotated inputs (>= 150 MB), CUDA events around
whole replays, candidates interleaved round by round; a short screen, then the best few again with more rounds.
usage: screen2.py GENOMES.json CACHE OUT.json SHAPES REF_IDS (comma-separated: the kernels to beat)
Builds every genome first (16 jobs), and profiles the best two kernels and torch at each shape (kernel names and
device times of eager calls, torch.profiler)."""
import json, math, statistics, sys, time
import torch
sys.path.insert(0, '.')
from genome import Genome, Problem
from templates import get_space
from evaluator.compile import Compiler
from evaluator.kernel_abi import EvoKernel

gfile, cache, out_path, shapes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(',')
genomes = [Genome.from_dict(d) for d in json.load(open(gfile))]
refs = set(sys.argv[5].split(','))
comp = Compiler.default(cache, jobs=16)
t_build = time.time()
built = comp.build_many(genomes)
print('built', len(built), 'failed', [(g.id, b.reason[:200]) for g, b in zip(genomes, built) if not b.ok][:8],
      round(time.time() - t_build), 's', flush=True)
kern = {}
for g in genomes:
    b = comp.build(g)
    if not (b.ok and b.cached):
        print('not built', g.id, b.reason, flush=True)
        continue
    kern[g.id] = (g, EvoKernel(b.library, b.knobs))
R = 20
print(torch.cuda.get_device_name(), len(kern), 'kernels', flush=True)


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


def time_graphs(graphs, rounds, warm_s):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
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


def profile_best(M, N, K, A, W, C, tf):
    """Kernel names and device times (us per call) of eager calls of torch and the best two kernels."""
    from torch.profiler import profile, ProfilerActivity
    prof_rows = {}
    for name in ['torch_linear'] + [k for k in sorted(tf, key=lambda k: tf[k][0]) if not k.startswith('torch')][:2]:
        if name == 'torch_linear':
            fn = lambda: torch.mm(A[0], W[0].t(), out=C[0])
        else:
            k = kern[name][1]
            wsb = k.workspace_size(M, N, K)
            ws = torch.empty(max(wsb, 16), device='cuda', dtype=torch.uint8)
            fn = lambda k=k, ws=ws, wsb=wsb: k.run(M, N, K, A[0].data_ptr(), W[0].data_ptr(), C[0].data_ptr(),
                                                   ws.data_ptr(), wsb, torch.cuda.current_stream().cuda_stream)
        for _ in range(20): fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20): fn()
            torch.cuda.synchronize()
        dt = lambda e: getattr(e, 'device_time_total', None) or getattr(e, 'cuda_time_total', 0) or 0
        rows = [(e.key[:90], round(dt(e) / max(e.count, 1), 2), e.count) for e in prof.key_averages() if dt(e) > 0]
        prof_rows[name] = rows
        print('   profile', name, rows, flush=True)
    return prof_rows


res = {}
for shape in shapes:
    print('shape', shape, flush=True)
    M, N, K = map(int, shape.split('x'))
    prob = Problem(M, N, K)
    sets = max(3, math.ceil(150e6 / (M * K * 2 + N * K * 2)))
    A = [torch.randn(M, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    W = [torch.randn(N, K, device='cuda', dtype=torch.half) for _ in range(sets)]
    WT = [w.t().contiguous() for w in W]
    C = [torch.empty(M, N, device='cuda', dtype=torch.half) for _ in range(sets)]
    ref = A[0].float() @ W[0].float().t()
    graphs = {'torch_linear': graph_of(lambda r, s: torch.mm(A[r % sets], W[r % sets].t(), out=C[r % sets])),
              'torch_nn': graph_of(lambda r, s: torch.mm(A[r % sets], WT[r % sets], out=C[r % sets]))}
    errs, skipped = {}, {}
    for gid, (g, k) in kern.items():
        sp = get_space(g.family)
        v = sp.shape_violations(g, prob)
        ci = k.can_implement(M, N, K)
        if v or ci != 0:
            skipped[gid] = v[0].rule if v else f'can_implement {ci}'
            print('   skip', shape, gid, skipped[gid], flush=True)
            continue
        wsb = k.workspace_size(M, N, K)
        print('   run', shape, gid, wsb, flush=True)
        ws = torch.empty(max(wsb, 16), device='cuda', dtype=torch.uint8)
        C[0].fill_(float('nan'))
        st = k.run(M, N, K, A[0].data_ptr(), W[0].data_ptr(), C[0].data_ptr(), ws.data_ptr(), wsb,
                   torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        err = ((C[0].float() - ref).norm() / ref.norm()).item() if st == 0 else float('inf')
        errs[gid] = err
        if not err < 1e-3:
            print('REFUSED', shape, gid, st, err, flush=True)
            continue
        graphs[gid] = graph_of(lambda r, s, k=k, ws=ws, wsb=wsb: k.run(
            M, N, K, A[r % sets].data_ptr(), W[r % sets].data_ptr(), C[r % sets].data_ptr(), ws.data_ptr(), wsb, s))
    t = time_graphs(graphs, 3, 0.5)
    cands = sorted((k for k in t if not k.startswith('torch')), key=lambda k: t[k][0])
    old = [k for k in cands if k in refs][:2]
    new = [k for k in cands if k not in refs][:6]
    focus = {k: graphs[k] for k in ['torch_linear', 'torch_nn'] + old + new}
    tf = time_graphs(focus, 15, 1.0)
    vend = min(tf['torch_linear'][0], tf['torch_nn'][0])
    res[shape] = {'screen': {k: round(v[0], 3) for k, v in sorted(t.items(), key=lambda kv: kv[1][0])},
                  'focus': {k: [round(v[0], 3), round(v[1], 4)] for k, v in tf.items()},
                  'errs': errs, 'skipped': skipped,
                  'params': {k: kern[k][0].param_dict for k in cands}}
    print(f'== {shape}  vendor {vend:.2f} us  ({len(cands)} kernels screened, {len(skipped)} skipped)', flush=True)
    for k, (us, sp_) in sorted(tf.items(), key=lambda kv: kv[1][0]):
        q = {} if k.startswith('torch') else kern[k][0].param_dict
        p = ' '.join(f"{q[x]}" for x in ('schedule', 'tile_m', 'tile_n', 'cluster_m', 'cluster_n', 'ksplit', 'pdl') if x in q)
        print(f'   {k:18s} {us:8.2f} us  spread {sp_ * 100:4.1f}%  vendor/this {vend / us:.3f}  {p}', flush=True)
    try:
        prof_rows = profile_best(M, N, K, A, W, C, tf)
    except Exception as e:  # the breakdown is a diagnostic: never lose the timings to it
        prof_rows = {'error': repr(e)}
        print('   profile failed', repr(e), flush=True)
    res[shape]['profile'] = prof_rows
    json.dump(res, open(out_path, 'w'), indent=1)

