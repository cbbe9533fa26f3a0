"""The GPU evaluator: compile (cache, pool) -> verify -> time in isolated worker processes.

Builder and Runner are separate (evaluator/pipeline.py): nvcc builds run in the compiler's pool,
started early by `prefetch`, while the worker gates and times the kernels already built. The
worker processes, and how a kernel that kills one is blamed, are in evaluator/worker_pool.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from genome import Genome, Problem
from templates import FamilyRegistry, family_registry

from .api import STATUS_CRASHED, STATUS_INVALID, STATUS_OK, BaselineSet, Measurement, Timing
from .compile import BuildResult, Compiler
from .cublaslt import describe_algo
from .paired import paired_figure, paired_ratio
from .pipeline import BuildRunPipeline, build_failure, space_check
from .timing_options import check_timing, timing_config
from .worker_pool import MeasureResult, WorkerPool

# MEASURE.md's best vendor: torch.matmul, cuBLASLt heuristic top-1 and cuBLASLt autotuned, each in
# the TN (W as given) and NN (W^T stored) formulations, all with fp32 compute.
BASELINES = ("torch_tn", "torch_nn", "cublaslt_heuristic", "cublaslt_heuristic_nn", "cublaslt_autotuned",
             "cublaslt_autotuned_nn")
AA_SUFFIX = "~aa"  # the id of a kernel's twin in an A/A run
# baselines a search measurement may be paired with: no autotuning, so timing one costs a launch
PAIRABLE = ("cublaslt_heuristic", "cublaslt_heuristic_nn", "torch_tn", "torch_nn")


def _timing(d: "dict | None") -> "Timing | None":
    return Timing(**d) if d else None


class GpuEvaluator:
    """Evaluator protocol on a real GPU. Options: see OPTIONS."""

    OPTIONS = ("cache_dir", "jobs", "gpu", "seed", "timing", "modes", "baselines", "log_dir", "silence_timeout_s",
               "build_timeout_s", "overlap", "paired")
    simulated = False
    # shapes it may search side by side (evolution/windows.py): they take turns on the one GPU (the
    # worker pool runs one request at a time) while their builds overlap each other and the timing
    lanes = 64

    def __init__(self, cache_dir: "str | Path | None" = None, jobs: "int | None" = None, gpu: int = 0, seed: int = 0,
                 timing: "dict | None" = None, modes: Sequence[str] = ("device",),
                 baselines: Sequence[str] = BASELINES, log_dir: "str | Path | None" = None,
                 silence_timeout_s: float = 60.0, build_timeout_s: float = 600.0,
                 families: "FamilyRegistry | None" = None, overlap: bool = True, paired: bool = True):
        self.families = families or family_registry()
        self._check = space_check(self.families)  # genome, problem -> why it cannot run, or None
        self.compiler = Compiler.default(cache_dir, jobs=jobs, timeout_s=build_timeout_s, families=self.families)
        self.pool = WorkerPool(gpu=gpu, silence_timeout_s=silence_timeout_s,
                               log_dir=Path(log_dir) if log_dir else None)
        self.seed = seed
        check_timing(dict(timing or {}))  # unknown options and a loosened gate are refused here too
        self.timing = dict(timing or {})
        self.modes = tuple(modes)
        self.baseline_names = tuple(baselines)
        self._baselines: dict[str, BaselineSet] = {}
        self.pipeline = BuildRunPipeline(self.compiler, self, self._check)
        self.overlap = bool(overlap)  # False: build a whole batch, then time it (no prefetch; for comparison)
        self.paired = bool(paired)    # time each search batch with the shape's reference baseline
        self._references: dict[str, tuple[str, float]] = {}  # problem -> (baseline, its start median)

    def set_reference(self, problem: Problem, baselines: "BaselineSet | None") -> "str | None":
        """From now on every search measurement of `problem` times the reference baseline in the
        same rounds as the kernels and carries the paired figure (Measurement.paired): the fastest
        of the baselines that need no autotuning, as measured when the shape started. Returns its
        name (None when pairing is off or no such baseline was measured)."""
        if not self.paired or baselines is None:
            return None
        table = {n: t for n, t in baselines.device.items() if n in PAIRABLE and n in self.baseline_names}
        if not table:
            return None
        name = min(table, key=lambda n: (table[n].median_us, n))
        self._references[problem.name] = (name, table[name].median_us)
        return name

    def describe(self) -> str:
        info = self.pool.info()
        return f"{info.get('device', 'GPU')} ({info.get('sm_count')} SMs, torch {info.get('torch')}, CUDA {info.get('cuda')})"

    def _seed_for(self, problem: Problem, ids: Sequence[str]) -> int:
        """Inputs of a measurement depend on (campaign seed, problem, and `ids`), not on call
        history. Kernels pass no ids: every batch of a problem gets the same gate inputs and timing
        sets, whichever kernels finished building together, so a resumed campaign (or a run with
        other build times) checks and times a kernel on the same inputs."""
        import hashlib
        blob = json.dumps([self.seed, problem.name, sorted(ids)]).encode()
        return int.from_bytes(hashlib.sha256(blob).digest()[:4], "little") >> 1

    def build(self, genomes: Sequence[Genome], progress=None) -> list[BuildResult]:
        return self.compiler.build_many(genomes, progress=progress)

    def prefetch(self, genomes: Sequence[Genome], problem: "Problem | None" = None) -> int:
        """Start building genomes now (the engine calls this while the GPU times another round)."""
        return self.pipeline.prefetch(genomes, problem) if self.overlap else 0

    def unbuilt(self, genomes: Sequence[Genome], problem: "Problem | None" = None) -> int:
        """How many of `genomes` have no build in the kernel cache yet (their round waits on nvcc)."""
        return sum(not self.compiler.cached(g) for g in genomes)

    def build_seconds_prior(self) -> "float | None":
        """What a build takes before this session timed a round that built (`Compiler.build_seconds_prior`)."""
        return self.compiler.build_seconds_prior()

    def device_facts(self) -> dict:
        """Facts of the GPU the bench needs: measured copy bandwidth (TB/s) for the roofline, L2 bytes
        for the rotation of input sets."""
        info = self.pool.info()
        return {"hbm_tbps": info.get("hbm_tbps"), "hbm_source": "copy bandwidth measured on this GPU",
                "l2_bytes": info.get("l2_bytes")}

    def stats(self) -> dict:
        """GPU busy seconds (gate + timing in the worker), builds run and their nvcc seconds."""
        return {**self.pipeline.stats.to_dict(), "builds": self.compiler.nvcc_runs,
                "build_seconds": self.compiler.nvcc_seconds}

    def baselines(self, problem: Problem) -> BaselineSet:
        if problem.name not in self._baselines:
            result = self.pool.measure(problem, [], self.baseline_names, self.modes, self.timing,
                                       self._seed_for(problem, self.baseline_names))
            self.pipeline.stats.gpu_busy_seconds += result.gpu_seconds
            self._baselines[problem.name] = baseline_set(problem, result)
        return self._baselines[problem.name]

    def run(self, problem: Problem, items: Sequence[tuple[Genome, BuildResult]],
            with_baselines: bool = False) -> "tuple[list[Measurement], float]":
        """The Runner: gate and time built kernels in the worker (with the baselines interleaved
        when asked); one measurement per item and the GPU seconds it took."""
        measurements, _, seconds = self._measure(problem, items, with_baselines=with_baselines)
        return measurements, seconds

    def _measure(self, problem: Problem, items: Sequence[tuple[Genome, BuildResult]], with_baselines: bool,
                 aa: bool = False) -> "tuple[list[Measurement], MeasureResult | None, float]":
        specs = [{"id": g.id, "lib": b.library, "knobs": list(b.knobs)} for g, b in items]
        if aa and specs:  # A/A: the first kernel once more, under another id, in the same rounds
            specs.append(dict(specs[0], id=specs[0]["id"] + AA_SUFFIX))
        reference = None if with_baselines else self._references.get(problem.name)
        base_names = self.baseline_names if with_baselines else ((reference[0],) if reference and specs else ())
        seed = self._seed_for(problem, list(self.baseline_names) if with_baselines else [])
        # every candidate alternates with one baseline: the search's reference, or with all the
        # baselines the first pairable one (bench, re-verification)
        alternate = reference[0] if reference else next((n for n in PAIRABLE if n in base_names), None)
        result = self.pool.measure(problem, specs, base_names, self.modes, self.timing, seed, reference=alternate) \
            if specs or base_names else None
        ref_timing = _timing((result.baselines.get(reference[0]) or {}).get("device")) \
            if reference and result else None
        n = max(1, len(specs))
        out = []
        for g, b in items:
            gid = g.id
            if result and gid in result.failures:
                status, reason = result.failures[gid]
                out.append(Measurement(gid, problem.name, status, reason=reason, build_seconds=b.seconds,
                                       build_key=b.build_key))
                continue
            r = result.kernels.get(gid, {}) if result else {}
            out.append(Measurement(
                gid, problem.name, r.get("status", STATUS_CRASHED), device=_timing(r.get("device")),
                server=_timing(r.get("server")), call=_timing(r.get("call")), rel_error=r.get("rel_error"),
                acc_error=r.get("acc_error"),
                reason=r.get("reason"), build_seconds=b.seconds,
                gpu_seconds=(result.gpu_seconds / n) if result else 0.0, build_key=b.build_key,
                paired=paired_figure(reference[0], reference[1], ref_timing, _timing(r.get("device")))
                if reference and r.get("status") == STATUS_OK else None))
        return out, result, (result.gpu_seconds if result else 0.0)

    def evaluate(self, genomes: Sequence[Genome], problem: Problem, builds: "Sequence[BuildResult] | None" = None,
                 with_baselines: bool = False, aa: bool = False
                 ) -> "list[Measurement] | tuple[list[Measurement], BaselineSet]":
        """Measure `genomes` on `problem`. During a search, builds stream into the worker as they
        finish (the pipeline); with `with_baselines` (re-verification, bench) every kernel and
        baseline is measured in one interleaved run once all are built, and with `aa` the first
        kernel that builds is timed twice in that run (its A/A ratio goes to BaselineSet.aa)."""
        if builds is None and not with_baselines and self.overlap:
            return self.pipeline.evaluate(genomes, problem)
        out: dict[str, Measurement] = {}
        to_build = []
        for g in genomes:
            why = self._check(g, problem)
            if why:
                out[g.id] = Measurement(g.id, problem.name, STATUS_INVALID, reason=why)
            else:
                to_build.append(g)
        by_id = {b.genome_id: b for b in (builds if builds is not None else self.compiler.build_many(to_build))}
        ready = []
        for g in to_build:
            b = by_id[g.id]
            if b.ok:
                ready.append((g, b))
            else:
                out[g.id] = build_failure(g, problem, b)
        measurements, result, seconds = self._measure(problem, ready, with_baselines, aa=aa and with_baselines)
        self.pipeline.stats.gpu_busy_seconds += seconds
        for (g, _), m in zip(ready, measurements):
            out[g.id] = m
        ordered = [out[g.id] for g in genomes]
        if with_baselines:
            bs = baseline_set(problem, result) if result else BaselineSet(problem.name)
            if aa and ready and result:
                bs.aa = aa_figure(ready[0][0].id, result)
            self._baselines.setdefault(problem.name, bs)
            return ordered, bs
        return ordered

    def focused_pair(self, problem: Problem, genome: Genome, build: BuildResult, vendor: str) -> dict:
        """One kernel against one vendor baseline, and against a twin of itself, in a run of those
        three alone, `focused_timing` rounds: every round is vendor, one of the two, vendor, the
        other, vendor, so a round lasts a few replays and each pair sees the same clock. Returns
        {kernel, vendor, paired (vendor / kernel), aa (kernel / twin)}, ratios as PairedRatio dicts,
        with the three timings' samples round by round (`samples`) for a later look at the pairs."""
        spec = {"id": genome.id, "lib": build.library, "knobs": list(build.knobs)}
        twin = dict(spec, id=genome.id + AA_SUFFIX)
        result = self.pool.measure(problem, [spec, twin], [vendor], ("device",), self.focused_timing(),
                                   self._seed_for(problem, [vendor]), reference=vendor)
        self.pipeline.stats.gpu_busy_seconds += result.gpu_seconds
        k = _timing((result.kernels.get(genome.id) or {}).get("device"))
        t = _timing((result.kernels.get(twin["id"]) or {}).get("device"))
        v = _timing((result.baselines.get(vendor) or {}).get("device"))
        out: dict = {"kernel": genome.id, "vendor": vendor}
        paired, aa = paired_ratio(v, k), paired_ratio(k, t)
        if paired is None or aa is None:
            why = result.failures.get(genome.id) or result.failures.get(vendor) or ("not timed", "")
            out["reason"] = f"{why[0]}: {why[1]}".strip(": ")
            return out
        out.update(paired=paired.to_dict(), aa=aa.to_dict(), kernel_us=k.median_us, vendor_us=v.median_us,
                   samples={"kernel": k.to_dict(), "twin": t.to_dict(), "vendor": v.to_dict()})
        return out

    def focused_timing(self) -> dict:
        """The focused run's timing: the evaluator's, with `focused_repeats` rounds (at least its
        `repeats`). Three graphs alone make a round short, so more rounds cost little, and they
        narrow the median's confidence interval that the paired and A/A figures quote."""
        cfg = timing_config(self.timing)
        return {**self.timing, "repeats": max(int(cfg["repeats"]), int(cfg["focused_repeats"]))}

    def builds_pending(self) -> int:
        """Builds submitted and not finished (closing waits for the running ones)."""
        return self.compiler.pending()

    def close(self) -> None:
        self.compiler.close()
        self.pool.close()


def aa_figure(kernel_id: str, result: MeasureResult) -> dict:
    """The A/A figure of a run with a twin: the kernel's paired ratio against itself."""
    one = _timing((result.kernels.get(kernel_id) or {}).get("device"))
    two = _timing((result.kernels.get(kernel_id + AA_SUFFIX) or {}).get("device"))
    ratio = paired_ratio(one, two)
    out: dict = {"kernel": kernel_id}
    if ratio is None:
        out["reason"] = "the kernel or its twin was not timed"
    else:
        out.update(ratio.to_dict())
        out["medians_ratio"] = one.median_us / two.median_us if one and two else None
    return out


def baseline_set(problem: Problem, result: MeasureResult) -> BaselineSet:
    bs = BaselineSet(problem=problem.name)
    for name, r in result.baselines.items():
        if r.get("status", STATUS_OK) != STATUS_OK or not r.get("device"):
            bs.notes[name] = f"{r.get('status', 'failed')}: {r.get('reason', '')}"
            continue
        for mode in ("device", "server", "call"):
            if r.get(mode):
                getattr(bs, mode)[name] = Timing(**r[mode])
        if r.get("rel_error") is not None:
            bs.rel_error[name] = r["rel_error"]
        if isinstance(r.get("algorithm"), dict):
            bs.algorithms[name] = dict(r["algorithm"])
        if "algorithms" in r:
            bs.notes[name] = f"{r.get('algorithms')} heuristic algorithms" + (
                f", {r.get('algorithms_timed')} timed, best index {r.get('algorithm_index')}"
                if "algorithm_index" in r else "") + (
                f": {describe_algo(bs.algorithms[name])}" if bs.algorithms.get(name) else "")
    for name, (status, reason) in result.failures.items():
        if name in BASELINES:
            bs.notes[name] = f"{status}: {reason}"
    if result.clocks:
        bs.notes["clocks"] = json.dumps(result.clocks, sort_keys=True)
    return bs
