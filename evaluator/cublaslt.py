"""cuBLASLt through ctypes: the vendor baselines 'cublaslt_heuristic' (top-1) and
'cublaslt_autotuned' (best of up to 100 heuristic candidates, timed).

Runs inside a GPU worker only. Binds whichever libcublasLt the process already loaded (PyTorch's),
else the first one found by name. fp16 inputs and output, fp32 compute and scale
(CUBLAS_COMPUTE_32F), alpha = 1, beta = 0.

Row-major C[M,N] = A[M,K] @ W[N,K]^T is the column-major product C^T[N,M] = op(X) @ Y with
X = W seen column-major as (K x N, ld K) and op = T ("tn"), or, in the "nn" formulation,
X = W^T stored row-major (K,N), seen column-major as (N x K, ld N) with op = N.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

CUDA_R_16F = 2
CUDA_R_32F = 0
CUBLAS_COMPUTE_32F = 68
CUBLAS_OP_N = 0
CUBLAS_OP_T = 1
DESC_TRANSA = 3
DESC_TRANSB = 4
PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 << 20


class MatmulAlgo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class HeuristicResult(ctypes.Structure):
    _fields_ = [("algo", MatmulAlgo), ("workspaceSize", ctypes.c_size_t), ("state", ctypes.c_int),
                ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


class CublasLtError(RuntimeError):
    pass


def _find_library() -> ctypes.CDLL:
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                path = line.split()[-1] if line.strip() else ""
                if "libcublasLt.so" in os.path.basename(path):
                    return ctypes.CDLL(path)
    except OSError:
        pass
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise CublasLtError("libcublasLt not found (load torch first, or install nvidia-cublas)")


def _check(status: int, what: str) -> None:
    if status != 0:
        raise CublasLtError(f"{what} failed with cublasStatus {status}")


@dataclass
class LtPlan:
    """One problem's descriptors and the heuristic's candidate algorithms."""

    lib: ctypes.CDLL
    handle: ctypes.c_void_p
    desc: ctypes.c_void_p
    a_desc: ctypes.c_void_p
    b_desc: ctypes.c_void_p
    c_desc: ctypes.c_void_p
    algos: list  # HeuristicResult, best-first as the heuristic ranks them
    formulation: str

    def run(self, algo_index: int, w_ptr: int, a_ptr: int, c_ptr: int, workspace_ptr: int, stream: int) -> None:
        alpha = ctypes.c_float(1.0)
        beta = ctypes.c_float(0.0)
        result = self.algos[algo_index]
        _check(self.lib.cublasLtMatmul(
            self.handle, self.desc, ctypes.byref(alpha),
            ctypes.c_void_p(w_ptr), self.a_desc, ctypes.c_void_p(a_ptr), self.b_desc,
            ctypes.byref(beta), ctypes.c_void_p(c_ptr), self.c_desc, ctypes.c_void_p(c_ptr), self.c_desc,
            ctypes.byref(result.algo), ctypes.c_void_p(workspace_ptr), ctypes.c_size_t(WORKSPACE_BYTES),
            ctypes.c_void_p(stream)), "cublasLtMatmul")


def plan(m: int, n: int, k: int, formulation: str = "tn", max_algos: int = 100) -> LtPlan:
    """Descriptors for C = A @ W^T and up to `max_algos` heuristic algorithms (fp32 compute)."""
    lib = _find_library()
    vp = ctypes.c_void_p
    handle, desc, a_desc, b_desc, c_desc, pref = vp(), vp(), vp(), vp(), vp(), vp()
    _check(lib.cublasLtCreate(ctypes.byref(handle)), "cublasLtCreate")
    _check(lib.cublasLtMatmulDescCreate(ctypes.byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate")
    trans_a = ctypes.c_int32(CUBLAS_OP_T if formulation == "tn" else CUBLAS_OP_N)
    trans_b = ctypes.c_int32(CUBLAS_OP_N)
    _check(lib.cublasLtMatmulDescSetAttribute(desc, DESC_TRANSA, ctypes.byref(trans_a), ctypes.c_size_t(4)), "TRANSA")
    _check(lib.cublasLtMatmulDescSetAttribute(desc, DESC_TRANSB, ctypes.byref(trans_b), ctypes.c_size_t(4)), "TRANSB")
    u64, i64 = ctypes.c_uint64, ctypes.c_int64
    if formulation == "tn":   # X = W as (K x N) ld K, op T
        _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(a_desc), CUDA_R_16F, u64(k), u64(n), i64(k)), "layout X")
    else:                     # X = W^T row-major (K,N) = (N x K) column-major, ld N, op N
        _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(a_desc), CUDA_R_16F, u64(n), u64(k), i64(n)), "layout X")
    _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(b_desc), CUDA_R_16F, u64(k), u64(m), i64(k)), "layout Y")
    _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(c_desc), CUDA_R_16F, u64(n), u64(m), i64(n)), "layout C")
    _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "PreferenceCreate")
    ws = ctypes.c_uint64(WORKSPACE_BYTES)
    _check(lib.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(ws),
                                                    ctypes.c_size_t(8)), "preference workspace")
    results = (HeuristicResult * max_algos)()
    count = ctypes.c_int(0)
    _check(lib.cublasLtMatmulAlgoGetHeuristic(handle, desc, a_desc, b_desc, c_desc, c_desc, pref,
                                              ctypes.c_int(max_algos), results, ctypes.byref(count)),
           "MatmulAlgoGetHeuristic")
    algos = [results[i] for i in range(count.value) if results[i].state == 0]
    if not algos:
        raise CublasLtError(f"cuBLASLt heuristic returned no algorithm for {m}x{n}x{k} ({formulation})")
    return LtPlan(lib, handle, desc, a_desc, b_desc, c_desc, algos, formulation)
