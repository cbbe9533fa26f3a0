"""The evaluator's boundary: what the engine asks and what it gets back.

The engine hands genomes and a problem to an `Evaluator` and receives one `Measurement` per
genome. Two evaluators implement it: the GPU evaluator (compile -> verify -> time on a real GPU,
in worker processes) and the analytic simulator (no GPU; every figure it returns says
`simulated=True`). Baselines (cuBLAS / cuBLASLt) come back as a `BaselineSet`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Mapping, Protocol, Sequence, runtime_checkable

from genome import Genome, Problem

# Measurement.status values, in cascade order.
STATUS_OK = "ok"
STATUS_INVALID = "invalid"            # broke a family rule for this shape (never built)
STATUS_COMPILE_FAILED = "compile_failed"
STATUS_REJECTED = "rejected"          # built, but ptxas serialised wgmma or spilled
STATUS_UNSUPPORTED = "unsupported"    # the kernel's can_implement refused the problem
STATUS_WRONG = "wrong"                # failed the correctness gate
STATUS_CRASHED = "crashed"            # faulted / corrupted memory: the worker was replaced
STATUS_TIMEOUT = "timeout"            # hung past its timeout: the worker was replaced
STATUSES = (STATUS_OK, STATUS_INVALID, STATUS_COMPILE_FAILED, STATUS_REJECTED, STATUS_UNSUPPORTED,
            STATUS_WRONG, STATUS_CRASHED, STATUS_TIMEOUT)


@dataclass
class Timing:
    """One timing mode's result in microseconds: the median and its spread over repeats.
    A figure that was not timed (the simulator's) has min_us = max_us = None and repeats 0."""

    median_us: float
    min_us: "float | None"
    max_us: "float | None"
    repeats: int
    samples_us: "list[float] | None" = None  # one per interleaved timing round, in round order
    # timed in alternation with a reference: the reference's sample taken right before each of ours,
    # and the one taken right after it (the pair's reference is their geometric mean: evaluator/paired.py)
    ref_samples_us: "list[float] | None" = None
    ref_after_us: "list[float] | None" = None

    @property
    def spread(self) -> "float | None":
        """(max - min) / median: the relative spread of the repeats; None when none was measured."""
        if self.min_us is None or self.max_us is None:
            return None
        return (self.max_us - self.min_us) / self.median_us if self.median_us > 0 else math.inf

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Measurement:
    genome_id: str
    problem: str                       # Problem.name
    status: str
    device: "Timing | None" = None     # CUDA-graph replay, rotated inputs (primary)
    server: "Timing | None" = None     # one launch after an idle gap, L2 flushed
    call: "Timing | None" = None       # synchronised call latency from Python
    rel_error: "float | None" = None   # worst relative Frobenius error over the gate's seeds; None: not checked
    acc_error: "float | None" = None   # worst error against the fp32 reference rounded to fp16 (the
                                       # accumulation bound of the gate); None: not checked
    reason: "str | None" = None
    simulated: bool = False
    build_seconds: float = 0.0
    gpu_seconds: float = 0.0
    build_key: "str | None" = None
    # paired against a reference baseline timed in the same rounds (evaluator.paired.PairedFigure):
    # {reference, reference_start_us, reference_us, median, low, high, rounds, effective_us}
    paired: "dict | None" = None
    # a failure's diagnostic text: for a compile error, the useful excerpt of the compiler's log
    # (evaluator.build_log.log_excerpt: the first errors with their context, at most ~200 lines / 16 KB)
    log: "str | None" = None

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK and self.device is not None

    @property
    def time_us(self) -> "float | None":
        """The time the search ranks by. Paired with a reference, it is the drift-corrected time
        `reference_start_us / median(reference / kernel per round)`: the kernel's time at the clock
        and power state in which the shape's baselines were measured. Else the raw device median."""
        if self.paired and self.paired.get("effective_us"):
            return float(self.paired["effective_us"])
        return self.device.median_us if self.device else None

    @property
    def raw_time_us(self) -> "float | None":
        """The device median of this run, whatever the clock did meanwhile."""
        return self.device.median_us if self.device else None

    def tflops(self, problem: Problem) -> "float | None":
        return problem.flops / (self.time_us * 1e-6) / 1e12 if self.time_us else None

    def to_dict(self) -> dict:
        out = asdict(self)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "Measurement":
        data = dict(data)
        for key in ("device", "server", "call"):
            if data.get(key) is not None:
                data[key] = Timing(**data[key])
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class BaselineSet:
    """Vendor baselines for one problem, by name (e.g. 'torch_nn', 'torch_tn', 'cublaslt_heuristic',
    'cublaslt_autotuned'), each timed the same ways as the candidates."""

    problem: str
    device: dict[str, Timing] = field(default_factory=dict)
    server: dict[str, Timing] = field(default_factory=dict)
    call: dict[str, Timing] = field(default_factory=dict)
    rel_error: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    # the cuBLASLt baselines' algorithms, as cuBLASLt describes them (evaluator.cublaslt.LtPlan.algo_config)
    algorithms: dict[str, dict] = field(default_factory=dict)
    simulated: bool = False
    aa: "dict | None" = None  # A/A: a kernel timed against a twin of itself in the same run (bench)

    def best(self, mode: str = "device") -> "tuple[str, float] | None":
        table = getattr(self, mode)
        if not table:
            return None
        name = min(table, key=lambda n: table[n].median_us)
        return name, table[name].median_us

    @property
    def best_vendor_us(self) -> "float | None":
        best = self.best("device")
        return best[1] if best else None

    def torch_us(self) -> "float | None":
        times = [t.median_us for n, t in self.device.items() if n.startswith("torch")]
        return min(times) if times else None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping) -> "BaselineSet":
        data = dict(data)
        for key in ("device", "server", "call"):
            data[key] = {n: Timing(**t) for n, t in (data.get(key) or {}).items()}
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@runtime_checkable
class Evaluator(Protocol):
    """Compile (where needed), verify and time genomes on one problem."""

    simulated: bool

    def describe(self) -> str:
        """One line: the device (or 'simulated H200'), for logs and reports."""

    def baselines(self, problem: Problem) -> BaselineSet: ...

    def evaluate(self, genomes: Sequence[Genome], problem: Problem) -> list[Measurement]: ...

    def close(self) -> None: ...
