"""Evolved FP16 GEMM kernels exported by evogemm (`evogemm export`).

    import torch, {package}
    c = {package}.hgemm(a, w)          # a (M, K), w (N, K), fp16 CUDA: c = a @ w.T
    {package}.load()                   # verify now (do it before capturing a CUDA graph)
    {package}.patch_linear()           # opt in: nn.Linear / F.linear use the kernels

`python -m {package}` verifies the package on this machine and prints what it serves. Needs torch;
neither evogemm nor nvcc. provenance.json and kernels/<id>/ say where each kernel came from.
"""

import json as _json
from pathlib import Path as _Path

from ._op import DISPATCH, hgemm, load, patch_linear, unpatch_linear

__all__ = ["hgemm", "load", "patch_linear", "unpatch_linear", "provenance", "DISPATCH"]


def provenance() -> dict:
    """Where the package came from: campaigns, GPU, driver, CUDA, nvcc and CUTLASS versions, date."""
    return _json.loads((_Path(__file__).resolve().parent / "provenance.json").read_text())
