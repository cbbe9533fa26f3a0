"""The dispatch table of an exported evogemm kernel package: which kernel serves which shape.

Loaded once per CUDA device, lazily. Before a kernel serves a shape on a machine for the first
time it is re-verified there against an fp32 reference (the campaign's gate: relative error
<= 1e-3, and the accumulation bound of fp32 accumulation against the reference rounded to fp16);
a kernel that fails, cannot load, or was built for another GPU architecture is dropped with a
warning and its shape falls back to torch.matmul. Verdicts are kept per machine in
$EVOGEMM_KERNELS_CACHE (default ~/.cache/evogemm_kernels), keyed by the package's dispatch table
and the GPU, so a later process does not verify again.

Needs torch at run time; neither evogemm nor nvcc.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._abi import STATUS_TEXT, EvoKernel, arch_runs_on

HERE = Path(__file__).resolve().parent
TOLERANCE = 1e-3                  # relative error against the fp32 reference (the campaign gate's default)
ACC_FLOOR, ACC_SQRT_K = 5e-5, 3.5e-6  # the gate's accumulation bound: max(floor, c * sqrt(K))
VERIFY_SEEDS = (1, 2)


def accumulation_limit(k: int) -> float:
    return max(ACC_FLOOR, ACC_SQRT_K * math.sqrt(max(1, k)))


@dataclass(frozen=True)
class Entry:
    """One dispatched shape: the kernel library that serves it and its runtime knobs."""

    m: int
    n: int
    k: int
    kernel: str          # genome id: kernels/<id>/
    library: str         # path relative to the package
    knobs: tuple[int, ...]
    arch: str
    speedup: float       # over torch.matmul, as measured by the campaign

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


@dataclass
class Served:
    """A verified kernel on one device, with its workspace allocated once."""

    kernel: EvoKernel
    workspace: Any       # torch uint8 tensor
    ws_bytes: int

    def __post_init__(self) -> None:  # what one call needs, read once: the hot path makes one ctypes call
        self.ws_ptr = self.workspace.data_ptr()
        self.fn, self.knobs_ptr, self.n_knobs = self.kernel.lib.evogemm_run, self.kernel.knobs_ptr, self.kernel.n_knobs

    def run(self, m: int, n: int, k: int, a_ptr: int, w_ptr: int, c_ptr: int, stream: int) -> int:
        return self.kernel.run(m, n, k, a_ptr, w_ptr, c_ptr, self.ws_ptr, self.ws_bytes, stream)


@dataclass
class DeviceTable:
    index: int
    served: "dict[tuple[int, int, int], Served]" = field(default_factory=dict)
    dropped: "dict[str, str]" = field(default_factory=dict)  # shape -> why


class Dispatch:
    """The package's dispatch table (dispatch.json) and one DeviceTable per CUDA device."""

    def __init__(self, root: "Path | None" = None):
        self.root = Path(root or HERE)
        raw = (self.root / "dispatch.json").read_bytes()
        self.digest = hashlib.sha256(raw).hexdigest()[:16]
        data = json.loads(raw)
        self.entries = {(e["m"], e["n"], e["k"]): Entry(m=e["m"], n=e["n"], k=e["k"], kernel=e["kernel"],
                                                        library=e["library"], knobs=tuple(e.get("knobs", ())),
                                                        arch=e["arch"], speedup=float(e.get("speedup", 0)))
                        for e in data.get("entries", [])}
        self.shapes = frozenset(self.entries)
        self.tables: "dict[int, DeviceTable]" = {}  # loaded devices
        self.served: "dict[int, dict]" = {}  # device -> {(m, n, k): Served}, read without the lock on the hot path
        self._lock = threading.Lock()

    def table(self, torch, index: int) -> DeviceTable:
        table = self.tables.get(index)
        if table is None:
            with self._lock:
                table = self.tables.get(index)
                if table is None:
                    table = self._load(torch, index)
                    self.tables[index] = table
                    self.served[index] = table.served
        return table

    # -- loading and verification ------------------------------------------------------------------
    def _load(self, torch, index: int) -> DeviceTable:
        table = DeviceTable(index)
        if not self.entries:
            return table
        props = torch.cuda.get_device_properties(index)
        capability = (props.major, props.minor)
        machine = f"{props.name}|{getattr(props, 'uuid', '')}|cuda {torch.version.cuda}"
        cache = _VerdictCache(self.digest, machine)
        with torch.cuda.device(index):
            for key, entry in sorted(self.entries.items()):
                why = self._serve(torch, index, entry, capability, cache, table)
                if why:
                    table.dropped[entry.shape] = why
                    warnings.warn(f"evogemm kernels: {entry.shape} falls back to torch.matmul on cuda:{index}: {why}",
                                  RuntimeWarning, stacklevel=3)
        cache.save()
        return table

    def _serve(self, torch, index: int, entry: Entry, capability, cache: "_VerdictCache",
               table: DeviceTable) -> "str | None":
        if not arch_runs_on(entry.arch, capability):
            return f"kernel built for sm_{entry.arch}, this GPU is compute capability {capability[0]}.{capability[1]}"
        try:
            kernel = EvoKernel(str(self.root / entry.library), entry.knobs)
        except (OSError, RuntimeError) as exc:
            return f"cannot load {entry.library}: {exc}"
        code = kernel.can_implement(entry.m, entry.n, entry.k)
        if code != 0:
            return f"kernel refuses the shape: {STATUS_TEXT.get(code, code)}"
        ws_bytes = max(256, kernel.workspace_size(entry.m, entry.n, entry.k))
        workspace = torch.empty(ws_bytes, dtype=torch.uint8, device=f"cuda:{index}")
        served = Served(kernel, workspace, ws_bytes)
        verdict = cache.get(entry)
        if verdict is None:
            verdict = verify(torch, index, entry, served)
            cache.put(entry, verdict)
        if not verdict["ok"]:
            return f"failed verification on this machine: {verdict['reason']}"
        table.served[(entry.m, entry.n, entry.k)] = served
        return None


def raise_status(served: Served, m: int, n: int, k: int, status: int) -> None:
    raise RuntimeError(f"evogemm kernel {served.kernel.path} failed on {m}x{n}x{k}: {STATUS_TEXT.get(status, status)}")


def run_kernel(torch, served: Served, a, w, out) -> None:
    m, k = a.shape
    n = w.shape[0]
    status = served.run(m, n, k, a.data_ptr(), w.data_ptr(), out.data_ptr(),
                        torch.cuda.current_stream(a.device).cuda_stream)
    if status != 0:
        raise_status(served, m, n, k, status)


def verify(torch, index: int, entry: Entry, served: Served) -> dict:
    """Run the kernel on fresh standard-normal inputs (two seeds) into a NaN-poisoned output and
    compare with the fp32 reference: {"ok", "rel_error", "acc_error", "reason"}."""
    device = f"cuda:{index}"
    worst = {"ok": True, "rel_error": 0.0, "acc_error": 0.0, "reason": None}
    limit = accumulation_limit(entry.k)
    for seed in VERIFY_SEEDS:
        gen = torch.Generator(device=device).manual_seed(seed)
        a = torch.randn(entry.m, entry.k, generator=gen, device=device).half()
        w = torch.randn(entry.n, entry.k, generator=gen, device=device).half()
        out = torch.full((entry.m, entry.n), float("nan"), dtype=torch.float16, device=device)
        try:
            run_kernel(torch, served, a, w, out)
            torch.cuda.synchronize(device)
        except RuntimeError as exc:
            return {"ok": False, "rel_error": None, "acc_error": None, "reason": str(exc)}
        ref = a.float() @ w.float().t()
        ref16 = ref.half().float()
        got = out.float()
        if bool(torch.isnan(got).any()):
            return {"ok": False, "rel_error": None, "acc_error": None, "reason": "outputs left unwritten (NaN)"}
        rel = float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))
        acc = float(torch.linalg.vector_norm(got - ref16) / torch.linalg.vector_norm(ref16))
        worst["rel_error"], worst["acc_error"] = max(worst["rel_error"], rel), max(worst["acc_error"], acc)
        if not math.isfinite(rel) or rel > TOLERANCE:
            return {**worst, "ok": False, "reason": f"relative error {rel:.3g} > {TOLERANCE:g}"}
        if not math.isfinite(acc) or acc > limit:
            return {**worst, "ok": False, "reason": f"error against the fp16-rounded reference {acc:.3g} > {limit:.3g}"}
    return worst


class _VerdictCache:
    """Verification verdicts of this package on this machine, in one JSON file per package."""

    def __init__(self, digest: str, machine: str):
        base = Path(os.environ.get("EVOGEMM_KERNELS_CACHE") or Path.home() / ".cache" / "evogemm_kernels")
        self.path = base / f"verified-{digest}.json"
        self.machine = machine
        try:
            self.data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.data = {}
        self.dirty = False

    def _key(self, entry: Entry) -> str:
        return f"{entry.shape}:{entry.kernel}"

    def get(self, entry: Entry) -> "dict | None":
        return self.data.get(self.machine, {}).get(self._key(entry))

    def put(self, entry: Entry, verdict: dict) -> None:
        self.data.setdefault(self.machine, {})[self._key(entry)] = verdict
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            tmp.write_text(json.dumps(self.data, indent=1, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError as exc:  # a read-only home costs a re-verification next time, nothing else
            warnings.warn(f"evogemm kernels: cannot save verification verdicts to {self.path}: {exc}",
                          RuntimeWarning, stacklevel=2)
