"""The shared C ABI of every evogemm kernel library (version 1), bound with ctypes.

This module imports nothing but the standard library: `evogemm export` copies it verbatim into
the standalone kernel package, so the GPU worker and an exported library call kernels the same
way. The ABI (templates/*/kernel.cu.j2, block `abi`)::

    int         evogemm_abi_version(void);
    const char* evogemm_family(void);
    int         evogemm_can_implement(int M, int N, int K, const int32_t* knobs, int n_knobs);
    size_t      evogemm_workspace_size(int M, int N, int K, const int32_t* knobs, int n_knobs);
    int         evogemm_run(int M, int N, int K, const void* A, const void* W, void* C,
                            void* workspace, size_t workspace_bytes,
                            const int32_t* knobs, int n_knobs, void* stream);

C = A @ W^T with A row-major (M, K), W row-major (N, K), C row-major (M, N), all fp16.
"""

from __future__ import annotations

import ctypes
from typing import Sequence

ABI_VERSION = 1
STATUS_TEXT = {1: "cannot implement this problem", 2: "workspace too small", 3: "initialisation failed",
               4: "launch failed", 5: "invalid argument"}


class EvoKernel:
    """A compiled evogemm kernel library with its runtime knobs bound (C ABI version 1)."""

    def __init__(self, path: str, knobs: Sequence[int] = ()):
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)
        self.lib.evogemm_abi_version.restype = ctypes.c_int
        version = self.lib.evogemm_abi_version()
        if version != ABI_VERSION:
            raise RuntimeError(f"{path}: C ABI version {version}, expected {ABI_VERSION}")
        i, vp = ctypes.c_int, ctypes.c_void_p
        self.lib.evogemm_family.restype = ctypes.c_char_p
        self.lib.evogemm_run.argtypes = [i, i, i, vp, vp, vp, vp, ctypes.c_size_t, vp, i, vp]
        self.lib.evogemm_run.restype = i
        self.lib.evogemm_workspace_size.argtypes = [i, i, i, vp, i]
        self.lib.evogemm_workspace_size.restype = ctypes.c_size_t
        self.lib.evogemm_can_implement.argtypes = [i, i, i, vp, i]
        self.lib.evogemm_can_implement.restype = i
        knobs = [int(k) for k in knobs]
        self._knob_array = (ctypes.c_int32 * max(1, len(knobs)))(*knobs)
        self.knobs_ptr = ctypes.cast(self._knob_array, ctypes.c_void_p).value
        self.n_knobs = len(knobs)
        self._run = self.lib.evogemm_run

    @property
    def family(self) -> str:
        return self.lib.evogemm_family().decode()

    def can_implement(self, m: int, n: int, k: int) -> int:
        return self.lib.evogemm_can_implement(m, n, k, self.knobs_ptr, self.n_knobs)

    def workspace_size(self, m: int, n: int, k: int) -> int:
        return int(self.lib.evogemm_workspace_size(m, n, k, self.knobs_ptr, self.n_knobs))

    def run(self, m: int, n: int, k: int, a_ptr: int, w_ptr: int, c_ptr: int, ws_ptr: int, ws_bytes: int,
            stream_ptr: int) -> int:
        """Enqueue C = A @ W^T on the stream; 0 or a status code of STATUS_TEXT."""
        return self._run(m, n, k, a_ptr, w_ptr, c_ptr, ws_ptr, ws_bytes, self.knobs_ptr, self.n_knobs, stream_ptr)


def arch_runs_on(arch: str, capability: "tuple[int, int]") -> bool:
    """Whether SASS built for `arch` ("90a", "80", ...) runs on a GPU of this compute capability:
    an arch-specific build ("a") only on its own capability, a plain one on the same major with an
    equal or higher minor."""
    digits = arch.rstrip("af")
    major, minor = int(digits[:-1]), int(digits[-1])
    if arch.endswith(("a", "f")):
        return capability == (major, minor)
    return capability[0] == major and capability[1] >= minor
