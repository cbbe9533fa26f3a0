"""Choose an evaluator: the real GPU one when a usable GPU is present, else the simulator."""

from __future__ import annotations

from typing import Any

from .api import Evaluator

BACKENDS = ("auto", "gpu", "simulator")


class NoGpuError(RuntimeError):
    """backend 'gpu' was asked for, but no usable CUDA GPU (or driver) is present."""


def gpu_available() -> "tuple[bool, str]":
    """(available, reason). Asks the CUDA driver through cuda-python; never raises."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return False, "cuda-python is not installed"
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False, f"cuInit failed ({err.name}): no NVIDIA driver or GPU"
        err, count = driver.cuDeviceGetCount()
        if err != driver.CUresult.CUDA_SUCCESS or count == 0:
            return False, "no CUDA device found"
        err, major = driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0)
        if err == driver.CUresult.CUDA_SUCCESS and major < 9:
            return False, f"GPU 0 has compute capability {major}.x; sm90_cutlass kernels need 9.0 (Hopper)"
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            return False, "PyTorch is not installed; the GPU evaluator needs it (pip install 'evogemm[gpu]')"
        return True, f"{count} CUDA device(s)"
    except Exception as exc:  # a missing or broken driver must not crash the CLI
        text = str(exc)
        if "driver library" in text or "libcuda" in text:
            return False, "no NVIDIA driver (libcuda.so) on this machine"
        return False, f"CUDA driver query failed: {text}"


def make_evaluator(backend: str = "auto", **options: Any) -> Evaluator:
    """Build the evaluator for `backend` ('auto' | 'gpu' | 'simulator').

    Options go to the evaluator's constructor (e.g. cache_dir, seed, noise, calibration).
    With 'auto' and no GPU the simulator is returned and its describe() says so.
    """
    if backend not in BACKENDS:
        raise ValueError(f"evaluator backend {backend!r} is not one of {', '.join(BACKENDS)}")
    if backend in ("auto", "gpu"):
        ok, why = gpu_available()
        if ok:
            from .gpu import GpuEvaluator
            return GpuEvaluator(**{k: v for k, v in options.items() if k in GpuEvaluator.OPTIONS})
        if backend == "gpu":
            raise NoGpuError(f"evaluator backend 'gpu' needs a Hopper GPU: {why}")
    from .simulator import SimulatedEvaluator
    return SimulatedEvaluator(**{k: v for k, v in options.items() if k in SimulatedEvaluator.OPTIONS})
