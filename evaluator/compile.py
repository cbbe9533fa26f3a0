"""Compile rendered kernels with nvcc into a content-addressed on-disk cache, in a parallel pool.

Builds are keyed by (rendered source, flags, nvcc version, CUTLASS version): a genome that only
changes runtime knobs reuses its build, and so do all shapes. A build whose ptxas report shows
warning C7510 (wgmma serialised) or register spills is rejected with that reason; the rejection
is cached like a success, so it is never paid twice. Timeouts are not cached.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import time
import threading
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from genome import Genome, InvalidGenome
from templates import FamilyRegistry, RenderedKernel, TemplateFamily, render

from .build_log import log_excerpt
from .cache_entry import entry_path, publish_entry, work_folder
from .elf_imports import ImportGuard

BUILD_GB = 3.5           # peak RSS of one CUTLASS sm90 build with nvcc 13 (measured 3.3-3.4 GB)
DEFAULT_TIMEOUT_S = 600  # one build normally takes 40-55 s


class ToolchainError(RuntimeError):
    """nvcc or the CUTLASS headers are missing or unusable."""


@dataclass(frozen=True)
class Toolchain:
    nvcc: str
    nvcc_version: str
    include_dirs: tuple[str, ...]
    cutlass_version: str

    @classmethod
    def discover(cls, nvcc: "str | None" = None) -> "Toolchain":
        nvcc_path = nvcc or os.environ.get("EVOGEMM_NVCC") or shutil.which("nvcc")
        if not nvcc_path and os.environ.get("CUDA_HOME"):
            candidate = Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc"
            nvcc_path = str(candidate) if candidate.exists() else None
        if not nvcc_path or not Path(nvcc_path).exists():
            raise ToolchainError("nvcc not found: install the CUDA toolkit (12.4 or newer, for sm_90a), put nvcc "
                                 "on PATH, or set EVOGEMM_NVCC or CUDA_HOME")
        return cls(nvcc=nvcc_path, nvcc_version=_nvcc_version(nvcc_path), include_dirs=cutlass_include_dirs(),
                   cutlass_version=_cutlass_version())


@lru_cache(maxsize=8)
def _nvcc_version(nvcc: str) -> str:
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"{nvcc} --version failed: {exc}") from exc
    lines = [ln for ln in out.splitlines() if ln.strip()]
    return lines[-1] if lines else out.strip()


def cutlass_include_dirs() -> tuple[str, ...]:
    """CUTLASS/CuTe headers from the `nvidia-cutlass` package (or EVOGEMM_CUTLASS_DIR)."""
    root = os.environ.get("EVOGEMM_CUTLASS_DIR")
    if root is None:
        try:
            import cutlass_library
        except ImportError as exc:
            raise ToolchainError("CUTLASS headers not found: pip install nvidia-cutlass, or set EVOGEMM_CUTLASS_DIR "
                                 "to a CUTLASS checkout") from exc
        root = str(Path(cutlass_library.__file__).resolve().parent / "source")
    dirs = (Path(root) / "include", Path(root) / "tools" / "util" / "include")
    if not (dirs[0] / "cutlass" / "cutlass.h").exists():
        raise ToolchainError(f"no cutlass/cutlass.h under {dirs[0]}: the CUTLASS install is incomplete")
    return tuple(str(d) for d in dirs)


def _cutlass_version() -> str:
    header = Path(cutlass_include_dirs()[0]) / "cutlass" / "version.h"
    parts = re.findall(r"#define CUTLASS_(MAJOR|MINOR|PATCH) (\d+)", header.read_text())
    return ".".join(v for _, v in parts) or "unknown"


@dataclass
class BuildResult:
    genome_id: str
    build_key: str
    ok: bool
    library: "str | None" = None
    seconds: float = 0.0       # time of the nvcc run that made it (0 for an invalid genome)
    cached: bool = False       # served from the cache by this call
    reason: "str | None" = None  # why it failed or was rejected
    log: "str | None" = None   # path of the kept build log
    excerpt: "str | None" = None  # a failed build's useful log excerpt (log_excerpt)
    registers: "int | None" = None
    spill_bytes: int = 0
    host: "str | None" = None  # the machine whose nvcc made it (build times differ between machines)
    knobs: tuple[int, ...] = ()
    lost: bool = False         # the machine building it failed (a Ray worker lost past its retries): a verdict
                               # on infrastructure, not on the kernel; the pipeline asks for the build once more

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Compiler:
    """The builder: render -> nvcc -> cache. Thread-safe. `submit` starts a build in a pool that
    lives as long as the compiler (one nvcc run per build key, however often it is asked for);
    `build_many` builds a batch and waits. Flags and architecture come from the genome's family."""

    cache_dir: Path
    toolchain: "Toolchain | None" = None
    jobs: "int | None" = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    extra_flags: tuple[str, ...] = ()
    reject_spills: bool = True
    families: "FamilyRegistry | None" = None
    _toolchain: "Toolchain | None" = field(default=None, init=False, repr=False)
    _executor: "ThreadPoolExecutor | None" = field(default=None, init=False, repr=False)
    _inflight: dict = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    nvcc_runs: int = field(default=0, init=False)
    nvcc_seconds: float = field(default=0.0, init=False)
    _run_seconds: list = field(default_factory=list, init=False, repr=False)  # this session's nvcc runs
    _cached_prior: "list | None" = field(default=None, init=False, repr=False)
    _imports: ImportGuard = field(default_factory=ImportGuard, init=False, repr=False)

    def __post_init__(self) -> None:
        self.cache_dir = Path(self.cache_dir).absolute()  # nvcc runs in the build folder: no relative paths

    @classmethod
    def default(cls, cache_dir: "str | Path | None" = None, **kwargs) -> "Compiler":
        return cls(cache_dir=Path(cache_dir or default_cache_dir()), **kwargs)

    # -- facts ------------------------------------------------------------------------------
    @property
    def tools(self) -> Toolchain:
        if self._toolchain is None:
            self._toolchain = self.toolchain or Toolchain.discover()
        return self._toolchain

    def flags(self, family: TemplateFamily) -> list[str]:
        return [*family.compile_flags(), *self.extra_flags, *(f"-I{d}" for d in self.tools.include_dirs)]

    def pool_size(self) -> int:
        if self.jobs:
            return max(1, self.jobs)
        return default_jobs()

    def build_key(self, kernel: RenderedKernel) -> str:
        flags = [f for f in self.flags(kernel.family) if not f.startswith("-I")]
        blob = json.dumps({"source": kernel.source, "flags": flags, "nvcc": self.tools.nvcc_version,
                           "cutlass": self.tools.cutlass_version}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def entry_dir(self, key: str) -> Path:
        return entry_path(self.cache_dir, key)

    # -- building ---------------------------------------------------------------------------
    def render(self, genome: Genome) -> RenderedKernel:
        return render(genome, self.families)

    def build(self, genome: Genome) -> BuildResult:
        try:
            kernel = self.render(genome)
        except (InvalidGenome, KeyError) as exc:
            return BuildResult(genome.id, "", ok=False, reason=f"invalid genome: {exc}")
        except Exception as exc:  # a template error from a patch
            return BuildResult(genome.id, "", ok=False, reason=f"render failed: {type(exc).__name__}: {exc}")
        key = self.build_key(kernel)
        result = self._lookup(key)
        if result is not None:
            result.genome_id, result.cached = genome.id, True
        else:
            result = self._nvcc(kernel, key)
        result.knobs = kernel.knobs
        return self.vet(genome, result)

    def vet(self, genome: Genome, result: BuildResult) -> BuildResult:
        """A build of `genome` as it may be used: a patched kernel whose library imports what its unpatched
        twin does not (elf_imports.ImportGuard) comes back refused. Every builder runs this on every build
        and every cache hit (a cache may predate the check, or come from another machine)."""
        if not (result.ok and result.library):
            return result
        if genome.patches:
            reason = self._imports.refusal(Path(result.library), genome.family, self._twin_library(genome))
            if reason is not None:
                return dataclasses.replace(result, ok=False, reason=reason, library=None)
        else:
            self._imports.note(genome.family, Path(result.library))
        return result

    def _twin_library(self, genome: Genome) -> "Path | None":
        """The cached library of the genome's unpatched twin (the same parameters), if there is one."""
        twin = self._lookup(self.key_of(Genome(genome.family, genome.params)))
        return Path(twin.library) if twin is not None and twin.ok and twin.library else None

    def cached(self, genome: Genome) -> bool:
        """Whether `genome`'s build (its build key: source, flags, toolchain) is in the cache."""
        return self._lookup(self.key_of(genome)) is not None

    def build_seconds_prior(self, most: int = 400) -> "float | None":
        """What one nvcc build takes on this machine: the median nvcc seconds of this session's successful
        builds; before any, of the cache's successful builds made on this host, else of those carried from
        other machines (at most `most` entries read, once): the CPU machine's nvcc took 66-80 s for
        kernels the H200 host's built in 44 s, so a carried cache's figure errs on the long side. None for
        a cache with no successful build."""
        with self._lock:
            if self._run_seconds:
                return statistics.median(self._run_seconds)
            cached = self._cached_prior
        if cached is None:  # read once, outside the lock (builds that finish meanwhile are not held up)
            here, mine, others = socket.gethostname(), [], []
            for meta in itertools.islice(self.cache_dir.glob("*/*/meta.json"), most):
                try:
                    data = json.loads(meta.read_text())
                except (OSError, json.JSONDecodeError):
                    continue
                if isinstance(data, dict) and data.get("ok") and float(data.get("seconds") or 0) > 0:
                    (mine if data.get("host") == here else others).append(float(data["seconds"]))
            cached = self._cached_prior = mine or others
        return statistics.median(cached) if cached else None

    def key_of(self, genome: Genome) -> str:
        """`genome`'s build key ("genome:<id>" for a genome that does not render)."""
        try:
            return self.build_key(self.render(genome))
        except Exception:  # invalid genome or bad patch: build() reports it
            return "genome:" + genome.id

    def _timed_build(self, genome: Genome) -> BuildResult:
        result = self.build(genome)
        if not result.cached and result.seconds:
            with self._lock:
                self.nvcc_runs += 1
                self.nvcc_seconds += result.seconds
                if result.ok:
                    self._run_seconds.append(result.seconds)
        return result

    def submit(self, genome: Genome) -> "Future[BuildResult]":
        """Start building `genome` (or join the build of the same key in flight); the future's
        result is this genome's BuildResult (its own id and knobs)."""
        key = self.key_of(genome)
        with self._lock:
            shared = self._inflight.get(key)
            if shared is None or (shared.done() and not _reusable(shared)):
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=self.pool_size(), thread_name_prefix="evogemm-nvcc")
                shared = self._executor.submit(self._timed_build, genome)
                self._inflight[key] = shared
        mine: "Future[BuildResult]" = Future()

        def deliver(done: "Future[BuildResult]") -> None:
            try:
                result = _copy_for(done.result(), genome.id)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                mine.set_exception(exc)
                return
            if result.ok or result.build_key:
                try:
                    result.knobs = self.render(genome).knobs
                except Exception:
                    pass
            mine.set_result(result)

        shared.add_done_callback(deliver)
        return mine

    def pending(self) -> int:
        """Builds submitted and not finished yet (finished ones are forgotten here: a later submit
        of the same key is served from the on-disk cache)."""
        with self._lock:
            for key in [k for k, f in self._inflight.items() if f.done()]:
                del self._inflight[key]
            return len(self._inflight)

    def build_many(self, genomes: Sequence[Genome],
                   progress: "Callable[[int, int, BuildResult], None] | None" = None) -> list[BuildResult]:
        """Build in parallel (pool sized by cores and memory), one nvcc run per distinct build
        key; results come back in input order, one per genome."""
        futures = [self.submit(g) for g in genomes]
        if progress:
            for done, future in enumerate(as_completed(futures), start=1):
                progress(done, len(futures), future.result())
        return [f.result() for f in futures]

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
            self._inflight.clear()
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    def _lookup(self, key: str) -> "BuildResult | None":
        meta = self.entry_dir(key) / "meta.json"
        if not meta.exists():
            return None
        try:
            data = json.loads(meta.read_text())
            result = BuildResult(**{k: v for k, v in data.items() if k in BuildResult.__dataclass_fields__})
        except (json.JSONDecodeError, TypeError):
            return None
        result.knobs = tuple(result.knobs)
        # the cache folder may have moved (copied to another machine): paths are relative to it
        entry = self.entry_dir(key)
        result.library = str(entry / "kernel.so") if result.ok else None
        result.log = str(entry / "build.log")
        if result.ok and not Path(result.library).exists():
            return None
        return result

    def _nvcc(self, kernel: RenderedKernel, key: str) -> BuildResult:
        final = self.entry_dir(key)
        work = work_folder(final)
        src, lib, log = work / "kernel.cu", work / "kernel.so", work / "build.log"
        src.write_text(kernel.source)
        cmd = [*build_priority_prefix(), self.tools.nvcc, *self.flags(kernel.family), str(src), "-o", str(lib)]
        start = time.monotonic()
        try:
            # its own session: a Ctrl-C at the terminal stops the campaign, not the builds in flight
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout_s, cwd=work,
                                  start_new_session=True)
            output, returncode = proc.stdout + proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            seconds = time.monotonic() - start
            text = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            shutil.rmtree(work, ignore_errors=True)  # not cached: a later build may take longer
            return BuildResult(kernel.genome.id, key, ok=False, seconds=seconds,
                               reason=f"nvcc timed out after {self.timeout_s:.0f} s: " + first_error(text),
                               excerpt=log_excerpt(text) if text else None)
        except OSError as exc:
            raise ToolchainError(f"cannot run nvcc ({self.tools.nvcc}): {exc}") from exc
        seconds = time.monotonic() - start
        if returncode < 0:  # killed by a signal (the OOM killer, a shutdown): says nothing of the kernel
            shutil.rmtree(work, ignore_errors=True)  # not cached: the next build of this key tries again
            return BuildResult(kernel.genome.id, key, ok=False, seconds=round(seconds, 2),
                               reason=f"nvcc was killed by signal {-returncode} (out of memory?): not a compile error",
                               excerpt=log_excerpt(output) if output else None)
        log.write_text(" ".join(cmd) + "\n\n" + output)
        report = parse_ptxas(output)
        reason = None
        if returncode != 0 or not lib.exists():
            reason = "compile error: " + first_error(output)
        elif report.serialised_wgmma:
            reason = "rejected: ptxas serialised wgmma (warning C7510), a silent slowdown"
        elif self.reject_spills and report.spill_bytes > 0:
            reason = f"rejected: register spills ({report.spill_bytes} bytes spilled)"
        ok = reason is None
        excerpt = None if ok else log_excerpt(output)
        if not ok and lib.exists():
            lib.unlink()
        result = BuildResult(kernel.genome.id, key, ok=ok, seconds=round(seconds, 2), reason=reason,
                             registers=report.max_registers, spill_bytes=report.spill_bytes, excerpt=excerpt,
                             host=socket.gethostname())
        result.library = str(final / "kernel.so") if ok else None
        result.log = str(final / "build.log")
        # meta.json goes in before the folder is published (renamed into place), so that a published entry is
        # whole: a build killed at any moment leaves at most a hidden work folder, never an entry without it
        (work / "meta.json").write_text(json.dumps(result.to_dict(), indent=1))
        if publish_entry(work, final):
            return result
        existing = self._lookup(key)  # another process finished the same key meanwhile
        if existing is None:  # pragma: no cover - replaced by another process twice as we looked
            raise OSError(f"cannot publish the build of {key} into {final.parent}: other processes keep replacing it")
        existing.genome_id = kernel.genome.id
        return existing


@dataclass(frozen=True)
class PtxasReport:
    max_registers: "int | None"
    spill_bytes: int
    serialised_wgmma: bool


def parse_ptxas(output: str) -> PtxasReport:
    regs = [int(m) for m in re.findall(r"Used (\d+) registers", output)]
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", output)]
    return PtxasReport(max(regs) if regs else None, max(spills) if spills else 0, "C7510" in output)


def first_error(output: str, limit: int = 400) -> str:
    for line in output.splitlines():
        if "error" in line.lower():
            return line.strip()[:limit]
    tail = [ln for ln in output.splitlines() if ln.strip()][-3:]
    return " | ".join(tail)[:limit] or "nvcc failed without a message"


def default_cache_dir() -> Path:
    return Path(os.environ.get("EVOGEMM_CACHE") or Path.home() / ".cache" / "evogemm" / "kernels")


BUILD_NICENESS = 10   # nvcc below the GPU worker: a timing taken while builds run keeps its CPU


def build_priority_prefix() -> list[str]:
    """`nice -n BUILD_NICENESS` where `nice` exists (its children, cicc and ptxas, inherit it): the
    GPU worker process, which launches and times the kernels, keeps the CPU it needs while a
    round's or another shape's builds run on every core. Nothing where there is no `nice`."""
    tool = shutil.which("nice")
    return [tool, "-n", str(BUILD_NICENESS)] if tool else []


def default_jobs() -> int:
    cores = os.cpu_count() or 1
    try:
        with open("/proc/meminfo") as fh:
            info = {ln.split(":")[0]: int(ln.split()[1]) for ln in fh if ":" in ln}
        avail_gb = info.get("MemAvailable", info.get("MemTotal", 0)) / 1024 / 1024
    except OSError:
        avail_gb = BUILD_GB * cores
    return max(1, min(cores, int(avail_gb // BUILD_GB)))


def _reusable(done: "Future[BuildResult]") -> bool:
    """A finished shared build may be joined again unless it was cancelled, raised or timed out
    (a timeout is not cached)."""
    if done.cancelled() or done.exception() is not None:
        return False
    return "timed out" not in (done.result().reason or "")


def _copy_for(result: BuildResult, genome_id: str) -> BuildResult:
    copy = BuildResult(**result.to_dict())
    copy.knobs = tuple(copy.knobs)
    copy.genome_id = genome_id
    return copy
