"""cuBLASLt through ctypes: the vendor baselines 'cublaslt_heuristic' (top-1) and
'cublaslt_autotuned' (best of up to 100 heuristic candidates, timed).

Runs inside a GPU worker only. Binds whichever libcublasLt the process already loaded (PyTorch's),
else the first one found by name. fp16 inputs and output, fp32 compute and scale
(CUBLAS_COMPUTE_32F), alpha = 1, beta = 0.

Row-major C[M,N] = A[M,K] @ W[N,K]^T is the column-major product C^T[N,M] = op(X) @ Y with
X = W seen column-major as (K x N, ld K) and op = T ("tn"), or, in the "nn" formulation,
X = W^T stored row-major (K,N), seen column-major as (N x K, ld N) with op = N.

Lifetimes: a GPU worker makes one LtHandle and reuses it for every problem; a problem's LtPlan
owns its matmul and layout descriptors (the preference lives only while the heuristic runs).
close() on either, or a `with` block, destroys what it owns; closing twice is harmless, and a
plan that fails part-way destroys whatever it had created before the error propagates.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass, field

from .cublaslt_enums import CLUSTERS, STAGES, TILES

CUDA_R_16F = 2
CUDA_R_32F = 0
CUBLAS_COMPUTE_32F = 68
CUBLAS_OP_N = 0
CUBLAS_OP_T = 1
DESC_TRANSA = 3
DESC_TRANSB = 4
PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 << 20
# cublasLtMatmulAlgoConfigAttributes_t: what an algorithm is, read back by LtPlan.algo_config
ALGO_CONFIG_ATTRIBUTES = (("algo_id", 0), ("tile_id", 1), ("splitk", 2), ("reduction_scheme", 3),
                          ("cta_swizzling", 4), ("custom_option", 5), ("stages_id", 6), ("inner_shape_id", 7),
                          ("cluster_shape_id", 8))


def describe_algo(config: dict) -> str:
    """A short reading of LtPlan.algo_config's ids: 'tile 64x64, stages 64x4, split-K 1, cluster 1x2x1' (a tile
    reads N x M of the problem: see cublaslt_enums). An id past the enum tables is shown as its number."""
    tile, stages, cluster = config.get("tile_id"), config.get("stages_id"), config.get("cluster_shape_id")
    parts = []
    if tile is not None:
        parts.append(f"tile {TILES[tile]}" if 0 < tile < len(TILES) else f"tile id {tile}")
    if stages:
        parts.append(f"stages {STAGES[stages]}" if stages in STAGES else f"stages id {stages}")
    if "splitk" in config:
        parts.append(f"split-K {config['splitk']}")
    if cluster is not None:
        parts.append(f"cluster {CLUSTERS[cluster]}" if cluster in CLUSTERS else f"cluster id {cluster}")
    return ", ".join(parts)


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


class _Owned:
    """cuBLASLt objects created so far, each with the function that destroys it. close() destroys
    them newest first, every one even if destroying another fails, and each only once."""

    def __init__(self, lib) -> None:
        self.lib = lib
        self._items: "list[tuple[str, ctypes.c_void_p]]" = []

    def create(self, create: str, destroy: str, what: str, *args) -> ctypes.c_void_p:
        """Call lib.<create>(&obj, *args); on success remember obj for lib.<destroy>(obj)."""
        obj = ctypes.c_void_p()
        _check(getattr(self.lib, create)(ctypes.byref(obj), *args), what)
        self._items.append((destroy, obj))
        return obj

    def close(self) -> None:
        failures = []
        while self._items:
            destroy, obj = self._items.pop()
            try:
                status = getattr(self.lib, destroy)(obj)
            except Exception as exc:
                failures.append(f"{destroy}: {type(exc).__name__}: {exc}")
                continue
            if status != 0:
                failures.append(f"{destroy} failed with cublasStatus {status}")
        if failures:
            raise CublasLtError("; ".join(failures))

    def close_quietly(self) -> None:
        """close() on an error path: the error on its way out matters more than a failed destroy."""
        try:
            self.close()
        except CublasLtError:
            pass


class LtHandle:
    """One cuBLASLt handle, reused by every plan made through it (one per GPU worker).

    close() (or leaving a `with` block) destroys it; a second close does nothing. Close the
    plans first: they borrow the handle."""

    def __init__(self, lib=None) -> None:
        self.lib = lib if lib is not None else _find_library()
        self._owned = _Owned(self.lib)
        self.handle = self._owned.create("cublasLtCreate", "cublasLtDestroy", "cublasLtCreate")

    def plan(self, m: int, n: int, k: int, formulation: str = "tn", max_algos: int = 100) -> "LtPlan":
        return _make_plan(self.lib, self.handle, m, n, k, formulation, max_algos)

    def close(self) -> None:
        self._owned.close()

    def __enter__(self) -> "LtHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class LtPlan:
    """One problem's descriptors and the heuristic's candidate algorithms.

    The plan owns its matmul and layout descriptors (and its handle when plan() made one for it):
    close() (or leaving a `with` block) destroys them; a second close does nothing."""

    lib: ctypes.CDLL
    handle: ctypes.c_void_p
    desc: ctypes.c_void_p
    a_desc: ctypes.c_void_p
    b_desc: ctypes.c_void_p
    c_desc: ctypes.c_void_p
    algos: list  # HeuristicResult, best-first as the heuristic ranks them
    formulation: str
    _owned: "_Owned | None" = field(default=None, repr=False)
    _own_handle: "LtHandle | None" = field(default=None, repr=False)

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

    def algo_config(self, algo_index: int) -> dict[str, int]:
        """What heuristic algorithm `algo_index` is, as cuBLASLt reports it: its algorithm id, tile id, split-K
        count, reduction scheme, CTA swizzling, custom option, stages id, inner-shape id and cluster-shape id (the
        enums of cublasLt.h). An attribute this library does not report, or reports wider than 8 bytes, is left
        out."""
        algo = self.algos[algo_index].algo
        out: dict[str, int] = {}
        for name, attr in ALGO_CONFIG_ATTRIBUTES:
            size = ctypes.c_size_t(0)
            if self.lib.cublasLtMatmulAlgoConfigGetAttribute(ctypes.byref(algo), ctypes.c_int(attr), None,
                                                             ctypes.c_size_t(0), ctypes.byref(size)) != 0:
                continue
            if not 0 < size.value <= 8:
                continue
            buf = (ctypes.c_uint8 * size.value)()
            if self.lib.cublasLtMatmulAlgoConfigGetAttribute(ctypes.byref(algo), ctypes.c_int(attr), buf,
                                                             size, ctypes.byref(size)) == 0:
                out[name] = int.from_bytes(bytes(buf), "little", signed=name in ("algo_id", "splitk"))
        return out

    def close(self) -> None:
        try:
            if self._owned is not None:
                self._owned.close()
        finally:
            if self._own_handle is not None:
                handle, self._own_handle = self._own_handle, None
                handle.close()

    def __enter__(self) -> "LtPlan":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def plan(m: int, n: int, k: int, formulation: str = "tn", max_algos: int = 100,
         handle: "LtHandle | None" = None) -> LtPlan:
    """Descriptors for C = A @ W^T and up to `max_algos` heuristic algorithms (fp32 compute).

    With `handle`, the plan borrows it; without, the plan gets a handle of its own, destroyed
    by the plan's close(). Nothing created is left behind when planning fails."""
    if handle is not None:
        return handle.plan(m, n, k, formulation, max_algos)
    own = LtHandle()
    try:
        result = own.plan(m, n, k, formulation, max_algos)
    except BaseException:
        try:
            own.close()
        except CublasLtError:
            pass  # the planning error is the one to report
        raise
    result._own_handle = own
    return result


def _make_plan(lib, handle: ctypes.c_void_p, m: int, n: int, k: int, formulation: str, max_algos: int) -> LtPlan:
    owned = _Owned(lib)
    try:
        desc = owned.create("cublasLtMatmulDescCreate", "cublasLtMatmulDescDestroy", "MatmulDescCreate",
                            CUBLAS_COMPUTE_32F, CUDA_R_32F)
        trans_a = ctypes.c_int32(CUBLAS_OP_T if formulation == "tn" else CUBLAS_OP_N)
        trans_b = ctypes.c_int32(CUBLAS_OP_N)
        _check(lib.cublasLtMatmulDescSetAttribute(desc, DESC_TRANSA, ctypes.byref(trans_a), ctypes.c_size_t(4)),
               "TRANSA")
        _check(lib.cublasLtMatmulDescSetAttribute(desc, DESC_TRANSB, ctypes.byref(trans_b), ctypes.c_size_t(4)),
               "TRANSB")
        if formulation == "tn":   # X = W as (K x N) ld K, op T
            x_rows, x_cols = k, n
        else:                     # X = W^T row-major (K,N) = (N x K) column-major, ld N, op N
            x_rows, x_cols = n, k
        a_desc = _layout(owned, x_rows, x_cols, "layout X")
        b_desc = _layout(owned, k, m, "layout Y")
        c_desc = _layout(owned, n, m, "layout C")
        algos = _heuristic(lib, handle, desc, a_desc, b_desc, c_desc, max_algos)
        if not algos:
            raise CublasLtError(f"cuBLASLt heuristic returned no algorithm for {m}x{n}x{k} ({formulation})")
    except BaseException:
        owned.close_quietly()
        raise
    return LtPlan(lib, handle, desc, a_desc, b_desc, c_desc, algos, formulation, _owned=owned)


def _layout(owned: _Owned, rows: int, cols: int, what: str) -> ctypes.c_void_p:
    """An fp16 column-major matrix layout (rows x cols, leading dimension rows)."""
    return owned.create("cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutDestroy", what, CUDA_R_16F,
                        ctypes.c_uint64(rows), ctypes.c_uint64(cols), ctypes.c_int64(rows))


def _heuristic(lib, handle, desc, a_desc, b_desc, c_desc, max_algos: int) -> list:
    """The heuristic's usable algorithms, best first; its preference descriptor is destroyed here."""
    owned = _Owned(lib)
    try:
        pref = owned.create("cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceDestroy", "PreferenceCreate")
        ws = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(lib.cublasLtMatmulPreferenceSetAttribute(pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(ws),
                                                        ctypes.c_size_t(8)), "preference workspace")
        results = (HeuristicResult * max_algos)()
        count = ctypes.c_int(0)
        _check(lib.cublasLtMatmulAlgoGetHeuristic(handle, desc, a_desc, b_desc, c_desc, c_desc, pref,
                                                  ctypes.c_int(max_algos), results, ctypes.byref(count)),
               "MatmulAlgoGetHeuristic")
    except BaseException:
        owned.close_quietly()
        raise
    owned.close()
    return [results[i] for i in range(count.value) if results[i].state == 0]
