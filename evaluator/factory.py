"""Evaluator backends by name: the real GPU one, the analytic simulator, `auto` (GPU when a usable
one is present, else the simulator), or a plug-in class named by import path.

Every backend is built with the campaign's template families (`families=`) and its options.
Options no backend takes are refused with the allowed ones named, never dropped silently.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable

from genome import PluginError, Registry, check_params, class_with
from templates import FamilyRegistry, family_registry

from .api import Evaluator

EVALUATOR_METHODS = ("describe", "baselines", "evaluate", "close")


class NoGpuError(RuntimeError):
    """backend 'gpu' was asked for, but no usable CUDA GPU (or driver) is present."""


def gpu_available(families: "Iterable[Any] | None" = None) -> "tuple[bool, str]":
    """(available, reason). Asks the CUDA driver through cuda-python; never raises. With
    `families`, the GPU must also be one they are built for (their compute capability)."""
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
        attr = driver.CUdevice_attribute
        err, major = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0)
        err2, minor = driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0)
        if err == driver.CUresult.CUDA_SUCCESS and err2 == driver.CUresult.CUDA_SUCCESS:
            fams = list(families) if families is not None else _families_of(None)
            refusals = [why for why in (f.supports_device(major, minor) for f in fams) if why]
            if fams and len(refusals) == len(fams):
                return False, "; ".join(refusals)
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            return False, "PyTorch is not installed; the GPU evaluator needs it (pip install 'evogemm[gpu]')"
        return True, f"{count} CUDA device(s)"
    except Exception as exc:  # a missing or broken driver must not crash the CLI
        text = str(exc)
        if "driver library" in text or "libcuda" in text:
            return False, "no NVIDIA driver (libcuda.so) on this machine"
        return False, f"CUDA driver query failed: {text}"


def _gpu_class() -> type:
    from .gpu import GpuEvaluator
    return GpuEvaluator


def _sim_class() -> type:
    from .simulator import SimulatedEvaluator
    return SimulatedEvaluator


def _ray_class() -> type:
    from .ray_evaluator import RayEvaluator  # imports Ray only when one is built
    return RayEvaluator


def _take(cls: type, options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k in cls.OPTIONS}


def _families_of(families: "FamilyRegistry | None") -> list[Any]:
    reg = families or family_registry()
    return [reg.resolve(n) for n in reg.names()]


def make_gpu(families: "FamilyRegistry | None" = None, **options: Any) -> Evaluator:
    ok, why = gpu_available(_families_of(families))
    if not ok:
        raise NoGpuError(f"evaluator backend 'gpu' needs a GPU the campaign's families run on: {why}")
    cls = _gpu_class()
    return cls(families=families, **_take(cls, options))


def make_simulator(families: "FamilyRegistry | None" = None, **options: Any) -> Evaluator:
    cls = _sim_class()
    return cls(families=families, **_take(cls, options))


def make_ray(families: "FamilyRegistry | None" = None, **options: Any) -> Evaluator:
    """Builds as Ray tasks, timing by the simulator or one GPU actor per GPU (needs evogemm[ray])."""
    cls = _ray_class()
    return cls(families=families, **_take(cls, options))


def make_auto(families: "FamilyRegistry | None" = None, **options: Any) -> Evaluator:
    ok, _ = gpu_available(_families_of(families))
    return make_gpu(families, **options) if ok else make_simulator(families, **options)


BUILTIN_OPTIONS: dict[str, Callable[[], tuple[str, ...]]] = {
    "gpu": lambda: tuple(_gpu_class().OPTIONS),
    "simulator": lambda: tuple(_sim_class().OPTIONS),
    "auto": lambda: tuple(sorted(set(_gpu_class().OPTIONS) | set(_sim_class().OPTIONS))),
    "ray": lambda: tuple(_ray_class().OPTIONS),
}


def evaluator_registry() -> Registry:
    """A fresh registry of evaluator backends: auto, gpu, simulator, ray; plug-ins are classes with
    describe/baselines/evaluate/close, constructed with the campaign's options (and families=,
    the campaign's FamilyRegistry, when the constructor takes it)."""
    return Registry("evaluator backend", {"auto": make_auto, "gpu": make_gpu, "simulator": make_simulator,
                                            "ray": make_ray},
                    check=class_with(*EVALUATOR_METHODS))


def allowed_options(backend: str, registry: "Registry | None" = None) -> "tuple[str, ...] | None":
    """The option names a backend takes (None: it takes any)."""
    if backend in BUILTIN_OPTIONS:
        return BUILTIN_OPTIONS[backend]()
    factory = (registry or evaluator_registry()).resolve(backend)
    if hasattr(factory, "OPTIONS"):
        return tuple(factory.OPTIONS)
    return None


def takes_option(backend: str, name: str, registry: "Registry | None" = None) -> bool:
    """Whether the backend's constructor takes option `name`."""
    allowed = allowed_options(backend, registry)
    if allowed is not None:
        return name in allowed
    return _takes((registry or evaluator_registry()).resolve(backend), name)


def check_options(backend: str, options: "dict[str, Any]", registry: "Registry | None" = None) -> None:
    """Refuse options the backend does not take, naming the allowed ones."""
    allowed = allowed_options(backend, registry)
    if allowed is not None:
        unknown = sorted(set(options) - set(allowed) - {"families"})
        if unknown:
            raise ValueError(f"evaluator backend {backend!r} takes no option {', '.join(map(repr, unknown))}; "
                             f"allowed: {', '.join(allowed)}")
        return
    check_params((registry or evaluator_registry()).resolve(backend), options, ("families",),
                 f"evaluator backend {backend!r}")


def _takes(factory: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def make_evaluator(backend: str = "auto", families: "FamilyRegistry | None" = None,
                   registry: "Registry | None" = None, **options: Any) -> Evaluator:
    """Build the evaluator for `backend` ('auto' | 'gpu' | 'simulator' | 'ray' | package.module:Class).

    With 'auto' and no GPU the simulator is returned and its describe() says so. Unknown options
    raise ValueError."""
    reg = registry or evaluator_registry()
    factory = reg.resolve(backend)
    check_options(backend, options, reg)
    if backend in BUILTIN_OPTIONS:
        return factory(families, **options)
    try:
        if _takes(factory, "families"):
            options["families"] = families
        return factory(**options)
    except TypeError as exc:
        raise PluginError(f"evaluator backend plug-in {backend!r} could not be built: {exc}") from exc
