"""Which kernels cuBLAS runs for torch.matmul (TN: A @ W.T, and NN: A @ Wt) at each shape, with
their CUPTI device times: torch.profiler, 20 launches after 20 warm-up launches."""
import json, sys, torch
from torch.profiler import profile, ProfilerActivity
out = {}
for name in sys.argv[2:]:
    m, n, k = map(int, name.split("x"))
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    w = torch.randn(n, k, device="cuda", dtype=torch.float16)
    wt = w.t().contiguous()
    row = {}
    for form, f in (("tn", lambda: a @ w.t()), ("nn", lambda: a @ wt)):
        for _ in range(20): f()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            for _ in range(20): f()
            torch.cuda.synchronize()
        ks = {}
        for e in p.events():
            if e.device_type.name == "CUDA":
                d = ks.setdefault(e.name, [0, 0.0]); d[0] += 1; d[1] += getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0)
        row[form] = {kname: {"launches": c, "mean_us": round(t / c, 2)} for kname, (c, t) in ks.items()}
    out[name] = row
    print(name, json.dumps(row)[:400], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
