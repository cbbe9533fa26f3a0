"""`hgemm(a, w)` = a @ w.T in fp16 through the package's evolved kernels, as a registered PyTorch
custom op (torch.library) so that it works under torch.compile and CUDA-graph capture, with
torch.matmul as the fallback for every shape, layout, dtype, device or alignment no kernel serves.

Eager calls take a short path (no dispatcher round trip): a dictionary lookup, one output
allocation from PyTorch's caching allocator, one ctypes call into the kernel library on the
current stream. The workspace is allocated once per kernel and device when the table loads.
"""

from __future__ import annotations

import threading
import warnings
from typing import Iterable

import torch

from ._table import Dispatch, raise_status

NAMESPACE = __package__ or "evogemm_kernels"
DISPATCH = Dispatch()
_warned: "set[str]" = set()
_warn_lock = threading.Lock()


def _warn_once(key: str, text: str) -> None:
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(text, RuntimeWarning, stacklevel=3)


_HALF = torch.float16
_raw_stream = torch._C._cuda_getCurrentRawStream  # the current stream's cudaStream_t, as an int
_is_compiling = torch.compiler.is_compiling


def _served(a: torch.Tensor, w: torch.Tensor):
    """The kernel that serves this call, or None (then the caller falls back to torch.matmul).
    The hot path reads a few tensor attributes and does one dictionary lookup."""
    index = a.get_device()
    table = DISPATCH.served.get(index)  # None: a CPU tensor, or a device whose table is not loaded yet
    if table is None:
        return _first_call(a, w, index)
    if a.dtype is not _HALF or w.dtype is not _HALF:
        return None
    sa, sw = a.shape, w.shape
    if len(sa) != 2 or len(sw) != 2 or sa[1] != sw[1]:
        return None
    served = table.get((sa[0], sw[0], sa[1]))
    if served is None or w.get_device() != index or not a.is_contiguous() or not w.is_contiguous():
        return None
    if (a.data_ptr() | w.data_ptr()) & 15:  # TMA and vector loads need 16-byte aligned bases
        return None
    return served


def _first_call(a: torch.Tensor, w: torch.Tensor, index: int):
    """Load (and verify) the device's table on its first dispatchable call, then serve the call."""
    if index < 0 or a.dim() != 2 or w.dim() != 2 or (a.shape[0], w.shape[0], a.shape[1]) not in DISPATCH.shapes:
        return None
    if torch.cuda.is_current_stream_capturing():
        _warn_once(f"capture{index}", f"{NAMESPACE}: first call on cuda:{index} inside a CUDA-graph capture: "
                   f"kernels cannot be verified there, torch.matmul is captured instead; call {NAMESPACE}.load() "
                   "before capturing")
        return None
    DISPATCH.table(torch, index)
    return _served(a, w)


def _hgemm_eager(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    served = _served(a, w)
    if served is None:
        return torch.matmul(a, w.t())
    m, k = a.shape
    n = w.shape[0]
    out = a.new_empty((m, n))
    status = served.fn(m, n, k, a.data_ptr(), w.data_ptr(), out.data_ptr(), served.ws_ptr, served.ws_bytes,
                       served.knobs_ptr, served.n_knobs, _raw_stream(a.get_device()))
    if status:
        raise_status(served, m, n, k, status)
    return out


@torch.library.custom_op(f"{NAMESPACE}::hgemm", mutates_args=())
def _hgemm_op(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return _hgemm_eager(a, w)


@_hgemm_op.register_fake
def _hgemm_fake(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return a.new_empty((a.shape[0], w.shape[0]))


def _needs_grad(a: torch.Tensor, w: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (a.requires_grad or w.requires_grad)


def hgemm(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """C = a @ w.T for a (M, K) and w (N, K), fp16, row-major. An evolved kernel serves the shapes
    of the dispatch table that verified on this GPU; everything else (and anything that needs
    gradients: the kernels have no backward) is torch.matmul."""
    if (a.requires_grad or w.requires_grad) and torch.is_grad_enabled():
        return torch.matmul(a, w.t())
    if _is_compiling():
        if a.dim() == 2 and w.dim() == 2 and (a.shape[0], w.shape[0], a.shape[1]) in DISPATCH.shapes:
            return _hgemm_op(a, w)
        return torch.matmul(a, w.t())
    return _hgemm_eager(a, w)


def load(devices: "Iterable[int] | None" = None) -> dict:
    """Load and verify the table now on these CUDA devices (default: the current one). Call it
    before capturing a CUDA graph. Returns {device: {"served": [...], "dropped": {shape: why}}}."""
    if not torch.cuda.is_available():
        raise RuntimeError(f"{NAMESPACE}: no CUDA device: the kernels cannot be loaded or verified here")
    out = {}
    for index in (list(devices) if devices is not None else [torch.cuda.current_device()]):
        table = DISPATCH.table(torch, int(index))
        out[int(index)] = {"served": sorted(f"{m}x{n}x{k}" for m, n, k in table.served),
                           "dropped": dict(table.dropped)}
    return out


class _LinearPatch:
    """torch.nn.functional.linear routed through hgemm for fp16 CUDA inputs of dispatched shapes."""

    def __init__(self) -> None:
        self.original = None
        self.shapes: "frozenset[tuple[int, int, int]] | None" = None

    def linear(self, input: torch.Tensor, weight: torch.Tensor, bias: "torch.Tensor | None" = None) -> torch.Tensor:
        if input.dim() >= 2 and weight.dim() == 2 and input.shape[-1] == weight.shape[1]:
            k, n = weight.shape[1], weight.shape[0]
            m = input.numel() // k if k else 0
            key = (m, n, k)
            if key in DISPATCH.shapes and (self.shapes is None or key in self.shapes) and not _needs_grad(input, weight):
                out = hgemm(input.reshape(m, k), weight)
                if bias is not None:
                    out = out + bias
                return out.view(*input.shape[:-1], n)
        return self.original(input, weight, bias)


_PATCH = _LinearPatch()


def patch_linear(shapes: "Iterable[tuple[int, int, int]] | None" = None) -> None:
    """Opt in: route torch.nn.functional.linear (and so nn.Linear) through hgemm for the
    dispatched (M, N, K) shapes, or only for `shapes` among them. Inference only: a call that
    needs gradients keeps the original. `unpatch_linear()` restores it."""
    _PATCH.shapes = frozenset(tuple(int(x) for x in s) for s in shapes) if shapes is not None else None
    if _PATCH.original is None:
        _PATCH.original = torch.nn.functional.linear
        torch.nn.functional.linear = _PATCH.linear


def unpatch_linear() -> None:
    if _PATCH.original is not None:
        torch.nn.functional.linear, _PATCH.original = _PATCH.original, None
