"""One launch of each named configuration at one shape, for Nsight Compute."""
import ctypes, os, sys
import torch
lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libclusterk.so"))
lib.proto_run.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 3 + [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
M, N, K = map(int, sys.argv[1].split("x"))
A = torch.randn(M, K, device="cuda", dtype=torch.float16)
W = torch.randn(N, K, device="cuda", dtype=torch.float16)
C = torch.empty(M, N, device="cuda", dtype=torch.float16)
for item in sys.argv[2:]:
    v, s = map(int, item.split(","))
    for _ in range(2):
        rc = lib.proto_run(M, N, K, A.data_ptr(), W.data_ptr(), C.data_ptr(), s, v, torch.cuda.current_stream().cuda_stream)
        assert rc == 0, rc
    torch.cuda.synchronize()
for _ in range(2):
    torch.matmul(A, W.t(), out=C)
torch.cuda.synchronize()
print("done")
