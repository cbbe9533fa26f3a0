"""Which kernels cuBLAS runs for torch.matmul (row-major A @ W^T, fp16) at each shape: names from the profiler.

nvjet names carry the vendor's tile, k-tile x stages and cluster (nvjet_sm90_hsh_<tile>_<k>x<stages>_<cluster>_...)."""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[2:]]
out = {}
for M, N, K in shapes:
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    for _ in range(3):
        torch.matmul(a, w.t())
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.matmul(a, w.t())
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    out[f"{M}x{N}x{K}"] = names
    print(f"{M}x{N}x{K}", names, flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
