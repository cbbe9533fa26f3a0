"""One GEMM launched a few times, for Nsight Compute: `python ncu_one.py MxNxK (torch | KERNEL.so KNOBS)`.

ncu_one.py 1000x1000x1000 torch                 -> torch.matmul(A, W.T) (the vendor's kernel)
ncu_one.py 1000x1000x1000 lib.so 0,1,1,0,0      -> the evogemm kernel of lib.so through the C ABI
"""
import sys

import torch

from evaluator.kernel_abi import EvoKernel

m, n, k = (int(x) for x in sys.argv[1].split("x"))
torch.manual_seed(0)
a = torch.randn(m, k, device="cuda", dtype=torch.float16)
w = torch.randn(n, k, device="cuda", dtype=torch.float16)
c = torch.empty(m, n, device="cuda", dtype=torch.float16)
if sys.argv[2] == "torch":
    def call():
        torch.matmul(a, w.t(), out=c)
else:
    knobs = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else []
    kern = EvoKernel(sys.argv[2], knobs)
    ws_bytes = kern.workspace_size(m, n, k)
    ws = torch.empty(max(ws_bytes, 1), device="cuda", dtype=torch.uint8)
    stream = torch.cuda.current_stream().cuda_stream

    def call():
        rc = kern.lib.evogemm_run(m, n, k, a.data_ptr(), w.data_ptr(), c.data_ptr(), ws.data_ptr(), ws_bytes,
                                  kern.knobs_ptr, kern.n_knobs, stream)
        assert rc == 0, rc
for _ in range(3):
    call()
torch.cuda.synchronize()
ref = (a.float() @ w.float().t())
err = ((c.float() - ref).norm() / ref.norm()).item()
print(f"{sys.argv[1]} {sys.argv[2]} rel_error {err:.3e}")
