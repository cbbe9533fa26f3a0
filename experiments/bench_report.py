"""The results of `evogemm bench` (per shape, aggregated) and its outputs: bench.md (tables and
aggregates), bench.json and bench.csv.

Besides times and speedups, each shape shows the achieved bandwidth (A, W and C moved once, over
the device time) and the percent of the roofline: max(2MNK / peak TFLOP/s, bytes / measured HBM
bandwidth) over the device time (MEASURE.md).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Sequence

from dataclasses import dataclass, field

from evaluator.api import BaselineSet, Measurement
from evaluator.cublaslt import describe_algo
from evaluator.paired import PairedRatio, paired_ratio
from genome import Genome, Problem

DEFAULT_PEAK_TFLOPS = 989.0  # dense fp16 tensor peak of the H100/H200 (datasheet; MEASURE.md's roofline)
DEFAULT_HBM_TBPS = 4.3       # H200 copy bandwidth measured in MEASURE.md (used when the worker did not measure)


@dataclass
class ShapeResult:
    problem: Problem
    baselines: BaselineSet
    measurements: list[tuple[Genome, Measurement]] = field(default_factory=list)
    # the best kernel, the best vendor baseline and the kernel's twin timed again, those three alone
    # (GpuEvaluator.focused_pair): the paired figure and the A/A figure quoted when present
    focused: "dict | None" = None

    def best(self) -> "tuple[Genome, Measurement] | None":
        ok = [(g, m) for g, m in self.measurements if m.ok]
        return min(ok, key=lambda gm: gm[1].time_us) if ok else None

    def paired(self) -> "PairedRatio | None":
        """The best kernel against the best vendor baseline, round by round (None without samples):
        from the focused run when there is one, else from the run of every candidate."""
        if self.focused and self.focused.get("paired"):
            return PairedRatio(**self.focused["paired"])
        best, vendor = self.best(), self.baselines.best("device")
        if not best or not vendor:
            return None
        return paired_ratio(self.baselines.device[vendor[0]], best[1].device)

    def aa(self) -> "dict | None":
        """The A/A figure quoted: the focused run's, else the one of the run of every candidate."""
        if self.focused and self.focused.get("aa"):
            return {"kernel": self.focused["kernel"], **self.focused["aa"]}
        return self.baselines.aa

    def speedups(self) -> dict[str, float]:
        best = self.best()
        if not best:
            return {}
        t = best[1].time_us
        out = {name: timing.median_us / t for name, timing in self.baselines.device.items()}
        if self.baselines.best_vendor_us:
            out["best_vendor"] = self.baselines.best_vendor_us / t
        if self.baselines.torch_us():
            out["torch"] = self.baselines.torch_us() / t
        return out


def geomean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# the aggregate of the paired figures (each shape's best vendor against its best kernel, median of
# the paired rounds; the focused run's where there is one) beside those of the medians' ratios
PAIRED = "best_vendor_paired"


def aggregate(results: Sequence[ShapeResult], against: str = "best_vendor") -> dict:
    """Geomean / mean / wins / worst over the shapes where some kernel passed; `missing` names the
    shapes where none did (a caller would fall back to the vendor library there). `against` is a
    baseline name of `speedups`, or PAIRED: the shapes' paired figures (a shape without one counts
    as missing)."""
    if against == PAIRED:
        pairs = [(r.problem.name, r.paired().median if r.paired() else None) for r in results]
    else:
        pairs = [(r.problem.name, r.speedups().get(against)) for r in results]
    missing = [n for n, s in pairs if not s]
    pairs = [(n, s) for n, s in pairs if s]
    if not pairs:
        return {"against": against, "shapes": 0, "of": len(results), "missing": missing}
    values = [s for _, s in pairs]
    worst = min(pairs, key=lambda p: p[1])
    return {"against": against, "shapes": len(pairs), "of": len(results), "missing": missing,
            "geomean": geomean(values), "mean": sum(values) / len(values), "wins": sum(1 for v in values if v > 1.0),
            "worst": worst[1], "worst_shape": worst[0], "best": max(values)}


def _fmt(x: "float | None", spec: str = ".1f") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _ratio(p: "PairedRatio | None") -> str:
    return "-" if p is None else _ratio_dict(p.to_dict())


def _ratio_dict(d: "dict | None") -> str:
    """median [the median's 95% interval] (range of the rounds, n rounds); figures stored before
    the interval was kept show the range alone."""
    if not d or "median" not in d:
        return "-"
    if d.get("ci_low") is None or d.get("ci_high") is None:
        return f"{d['median']:.3f} [{d['low']:.3f}-{d['high']:.3f}]"
    return (f"{d['median']:.3f} [{d['ci_low']:.3f}-{d['ci_high']:.3f}] "
            f"({d['low']:.3f}-{d['high']:.3f}, {d['rounds']})")


def _relative(d: dict, low: str, high: str) -> float:
    return (d[high] - d[low]) / d["median"]


def aa_summary(aa: "list[tuple[str, dict]]") -> str:
    """The bench's A/A line: the largest deviation of a median from 1, the widest interval of a
    median (where the figures have one) and the widest range of rounds, with their shapes."""
    worst = max(aa, key=lambda t: abs(t[1]["median"] - 1.0))
    widest = max(aa, key=lambda t: _relative(t[1], "low", "high"))
    with_ci = [t for t in aa if t[1].get("ci_low") is not None and t[1].get("ci_high") is not None]
    ci = ""
    if with_ci:
        w = max(with_ci, key=lambda t: _relative(t[1], "ci_low", "ci_high"))
        ci = f"; widest 95% interval of a median {100 * _relative(w[1], 'ci_low', 'ci_high'):.1f}% ({w[0]})"
    return (f"- A/A (a kernel against itself, paired): largest deviation {worst[1]['median']:.4f} ({worst[0]})"
            f"{ci}; widest range of rounds {100 * _relative(widest[1], 'low', 'high'):.1f}% ({widest[0]}) "
            f"over {len(aa)} shapes")


def _clock_note(bs: BaselineSet) -> str:
    """SM clock before -> after the timing rounds (NVML), to make throttling visible."""
    try:
        clocks = json.loads(bs.notes.get("clocks", "{}"))
        return f"{clocks['before_timing']['sm_mhz']}->{clocks['after_timing']['sm_mhz']}"
    except (KeyError, TypeError, ValueError):
        return "-"


def roofline_us(problem: Problem, peak_tflops: float, hbm_tbps: float) -> float:
    """The least time the product can take: compute-bound or memory-bound, whichever is slower."""
    return max(problem.flops / (peak_tflops * 1e12), problem.min_bytes / (hbm_tbps * 1e12)) * 1e6


def achieved_tbps(problem: Problem, time_us: float) -> float:
    return problem.min_bytes / (time_us * 1e-6) / 1e12


def render_markdown(results: Sequence[ShapeResult], meta: dict) -> str:
    sim = " (SIMULATED: analytic model, no GPU)" if meta.get("simulated") else ""
    names = sorted({n for r in results for n in r.baselines.device})
    lines = [f"# evogemm bench{sim}", "",
             f"- date: {meta['date']}", f"- device: {meta['device']}",
             *([f"- command: `{meta['command']}`"] if not meta.get("merged_from") else
               [f"- merged from {len(meta['merged_from'])} bench runs over disjoint shapes (`evogemm bench --merge`):",
                *(f"  - {m['date']} on {m['host']}: `{m['command']}`" for m in meta["merged_from"])]),
             f"- kernels: {meta['n_kernels']}; shapes: {len(results)}; timing: {meta['timing_note']}",
             *([f"- PARTIAL: written after {meta['partial']}; the bench had not finished"] if meta.get("partial") else []),
             *([f"- WARNING: timing below MEASURE.md's protocol ({', '.join(meta['below_protocol'])}); "
                "indicative only"] if meta.get("below_protocol") else []), "",
             "Device time in microseconds (CUDA-graph replay, rotated inputs, each call after the previous one "
             "has completed, median of repeats; spread = "
             "(max-min)/median). Speedup = baseline time / best kernel time. TB/s = bytes of A, W and C moved "
             f"once / time; % roofline = max(2MNK / {meta['peak_tflops']:g} TFLOP/s, bytes / "
             f"{meta['hbm_tbps']:g} TB/s, the {meta['hbm_source']}) / time. Paired = the median over the "
             "interleaved timing rounds of best vendor time / best kernel time in the same round (each kernel "
             "replay between two of the vendor's, their geometric mean its pair), with the median's 95% "
             "confidence interval [order statistics; the range at 5 rounds or fewer] and the range of the ratios "
             "(and the rounds); A/A = a kernel timed against a twin of itself in the same rounds (1.000 is ideal; "
             "its interval is how far a paired figure moves with nothing changed). Where a shape has a focused "
             "run (the best kernel, its twin and the best vendor baseline timed again, those three alone, "
             "focused_repeats rounds), paired and A/A come from it.", ""]
    head = ["shape"] + names + ["best vendor", "vendor TB/s", "best kernel", "spread", "TFLOP/s", "TB/s",
                                "% roofline", "vs torch", "vs best vendor", "paired [95% CI] (range)", "A/A [95% CI] (range)", "kernel",
                                "SM MHz"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for r in results:
        best = r.best()
        sp = r.speedups()
        row = [r.problem.name] + [_fmt(r.baselines.device[n].median_us) if n in r.baselines.device else "-" for n in names]
        vendor = r.baselines.best_vendor_us
        row += [_fmt(vendor), _fmt(achieved_tbps(r.problem, vendor), ".2f") if vendor else "-"]
        if best:
            g, m = best
            roof = roofline_us(r.problem, meta["peak_tflops"], meta["hbm_tbps"])
            row += [_fmt(m.time_us), _fmt(m.device.spread, ".1%"), _fmt(m.tflops(r.problem)),
                    _fmt(achieved_tbps(r.problem, m.time_us), ".2f"), _fmt(100 * roof / m.time_us, ".0f"),
                    _fmt(sp.get("torch"), ".3f"), _fmt(sp.get("best_vendor"), ".3f"), _ratio(r.paired()),
                    _ratio_dict(r.aa()), g.id[:8]]
        else:
            row += ["-"] * 10
        row.append(_clock_note(r.baselines))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for against in ("best_vendor", PAIRED, "torch"):
        a = aggregate(results, against)
        if a.get("shapes"):
            lines.append(f"- vs {against}: geomean {a['geomean']:.3f}x, arithmetic mean {a['mean']:.3f}x, "
                         f"wins {a['wins']}/{a['shapes']}, worst {a['worst']:.3f}x ({a['worst_shape']}), "
                         f"best {a['best']:.3f}x"
                         + (f"; over {a['shapes']} of {a['of']} shapes, "
                            f"{'no paired figure' if against == PAIRED else 'no passing kernel'} for "
                            f"{', '.join(a['missing'])}" if a["missing"] else ""))
    aa = [(r.problem.name, r.aa()) for r in results if r.aa() and "median" in r.aa()]
    if aa:
        lines.append(aa_summary(aa))
    if meta.get("simulated"):
        lines.append("- SIMULATED: no kernel ran and no output was checked; times are the analytic model's")
        return "\n".join(lines) + "\n"
    errs = {}
    for r in results:
        for n, e in r.baselines.rel_error.items():
            errs[n] = max(errs.get(n, 0.0), e)
    if errs:
        lines.append("- correctness gate, worst relative error of each baseline: " +
                     ", ".join(f"{n} {e:.2e}" for n, e in sorted(errs.items())))
    kerrs = [m.rel_error for r in results for _, m in r.measurements if m.ok and m.rel_error is not None]
    if kerrs:
        lines.append(f"- correctness gate, kernels: worst relative error {max(kerrs):.2e} over {len(kerrs)} passing runs")
    fails: dict[str, int] = {}
    for r in results:
        for _, m in r.measurements:
            if not m.ok:
                fails[m.status] = fails.get(m.status, 0) + 1
    if fails:
        lines.append("- kernel runs not timed: " + ", ".join(f"{k} {v}" for k, v in sorted(fails.items())))
    picks = [(r.problem.name, best[0], r.baselines.algorithms.get(best[0]))
             for r in results if (best := r.baselines.best("device"))]
    if any(algo for _, _, algo in picks):
        lines += ["", "The best vendor baseline at each shape, and the algorithm cuBLASLt ran where it is one:", "",
                  "| shape | best vendor | its algorithm |", "|---|---|---|"]
        lines += [f"| {shape} | {name} | {describe_algo(algo) if algo else '-'} |" for shape, name, algo in picks]
    other = [(r.problem.name, mode, getattr(r.baselines, mode)) for r in results for mode in ("server", "call")
             if getattr(r.baselines, mode)]
    if other:
        lines += ["", "Server mode (idle gap, L2 flushed, one launch) and call latency (synchronised Python call), "
                  "median us: best kernel / best vendor", "", "| shape | server kernel | server vendor | call kernel | call vendor |",
                  "|---|---|---|---|---|"]
        for r in results:
            best = r.best()
            sv = r.baselines.best("server")
            cv = r.baselines.best("call")
            row = [r.problem.name,
                   _fmt(best[1].server.median_us) if best and best[1].server else "-", _fmt(sv[1]) if sv else "-",
                   _fmt(best[1].call.median_us) if best and best[1].call else "-", _fmt(cv[1]) if cv else "-"]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def load_results(path: "str | Path") -> "tuple[list[ShapeResult], dict]":
    """The shapes and meta of a bench.json that `write_outputs` wrote (or the folder holding it)."""
    path = Path(path)
    if path.is_dir():
        path = path / "bench.json"
    try:
        data = json.loads(path.read_text())
        results = [ShapeResult(problem=Problem.parse(s["problem"]),
                               baselines=BaselineSet.from_dict(s["baselines"]),
                               measurements=[(Genome.from_dict(k["genome"]), Measurement.from_dict(k["measurement"]))
                                             for k in s.get("kernels", [])],
                               focused=s.get("focused"))
                   for s in data["shapes"]]
        return results, dict(data["meta"])
    except FileNotFoundError as exc:
        raise ValueError(f"{path}: no bench result there") from exc
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: not a bench.json written by evogemm bench ({type(exc).__name__}: {exc})") from exc


def _runs_of(path: "str | Path", meta: dict) -> list[dict]:
    """The bench runs behind one result: itself, or the runs a merged result was made of."""
    keys = ("path", "date", "device", "host", "command", "hbm_tbps", "hbm_source", "n_kernels")
    if meta.get("merged_from"):
        return [{k: run.get(k) for k in keys} for run in meta["merged_from"]]
    return [{k: meta.get(k) for k in keys} | {"path": str(path)}]


def merge_results(paths: "Sequence[str | Path]") -> "tuple[list[ShapeResult], dict]":
    """One result from bench runs over disjoint shapes (a suite split over GPUs or device calls):
    the shapes in the order given, and a meta that lists every run (date, device, host, command;
    a merged result given again is flattened into its runs). Refused: a shape in two results
    (which one to quote is a choice), simulated and measured results together, and results from
    different devices, timing options, modes or roofline peaks. A result written before the
    roofline figures were recorded is read with the defaults (989 TFLOP/s, 4.3 TB/s), and says so."""
    if len(paths) < 2:
        raise ValueError("--merge: give two or more bench results")
    results: list[ShapeResult] = []
    metas: list[dict] = []
    runs: list[dict] = []
    seen: dict[str, str] = {}
    for path in paths:
        shapes, meta = load_results(path)
        for r in shapes:
            if r.problem.name in seen:
                raise ValueError(f"--merge: {r.problem.name} is in both {seen[r.problem.name]} and {path}")
            seen[r.problem.name] = str(path)
        if meta.get("peak_tflops") is None:
            meta["peak_tflops"] = DEFAULT_PEAK_TFLOPS
        if not meta.get("hbm_tbps"):
            meta["hbm_tbps"], meta["hbm_source"] = DEFAULT_HBM_TBPS, "MEASURE.md's H200 copy bandwidth (not recorded)"
        results += shapes
        metas.append({"path": str(path), **meta})
        runs += _runs_of(path, meta)
    for key, what in (("simulated", "simulated and measured results"), ("device", "results from different devices"),
                      ("timing", "results with different timing options"), ("modes", "results with different modes"),
                      ("peak_tflops", "results with different --peak-tflops")):
        values = {json.dumps(m.get(key), sort_keys=True) for m in metas}
        if len(values) > 1:
            raise ValueError(f"--merge: {what} cannot be merged ({key}: {', '.join(sorted(values))})")
    first = metas[0]
    # the roofline's memory side: the highest copy bandwidth a run measured, so that no shape's
    # percent of the roofline is quoted above what its own run's figure would give
    roof = max(metas, key=lambda m: m["hbm_tbps"])
    meta = {"date": max(m.get("date") or "" for m in metas), "device": first.get("device"),
            "simulated": bool(first.get("simulated")),
            "command": " ; ".join(str(r.get("command")) for r in runs),
            "n_kernels": len({g.id for r in results for g, _ in r.measurements}),
            "host": ", ".join(sorted({str(r.get("host")) for r in runs})),
            "timing": first.get("timing"), "modes": first.get("modes"),
            "below_protocol": sorted({b for m in metas for b in m.get("below_protocol") or []}),
            "timing_note": first.get("timing_note"), "peak_tflops": first["peak_tflops"],
            "hbm_tbps": roof["hbm_tbps"], "hbm_source": roof.get("hbm_source"),
            "merged_from": runs}
    return results, meta


def write_outputs(results: Sequence[ShapeResult], out: Path, meta: dict) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta, "aggregate": {a: aggregate(results, a) for a in ("best_vendor", PAIRED, "torch")},
            "shapes": [{"problem": r.problem.name, "baselines": r.baselines.to_dict(),
                        "best": r.best()[0].id if r.best() else None, "speedups": r.speedups(),
                        "paired_vs_best_vendor": r.paired().to_dict() if r.paired() else None,
                        "focused": r.focused,
                        "kernels": [{"genome": g.to_dict(), "measurement": m.to_dict()} for g, m in r.measurements]}
                       for r in results]}
    paths = {"json": out / "bench.json", "csv": out / "bench.csv", "md": out / "bench.md"}
    paths["json"].write_text(json.dumps(data, indent=1))
    with paths["csv"].open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["shape", "candidate", "kind", "status", "device_us", "min_us", "max_us", "server_us", "call_us",
                    "tflops", "rel_error", "simulated", "reason"])
        for r in results:
            for name, t in sorted(r.baselines.device.items()):
                w.writerow([r.problem.name, name, "baseline", "ok", t.median_us, t.min_us, t.max_us,
                            r.baselines.server.get(name).median_us if name in r.baselines.server else "",
                            r.baselines.call.get(name).median_us if name in r.baselines.call else "",
                            r.problem.flops / (t.median_us * 1e-6) / 1e12, r.baselines.rel_error.get(name, ""),
                            r.baselines.simulated, ""])
            for g, m in r.measurements:
                w.writerow([r.problem.name, g.id, "kernel", m.status, m.time_us or "",
                            m.device.min_us if m.device else "", m.device.max_us if m.device else "",
                            m.server.median_us if m.server else "", m.call.median_us if m.call else "",
                            m.tflops(r.problem) or "", m.rel_error if m.rel_error is not None else "",
                            m.simulated, m.reason or ""])
    paths["md"].write_text(render_markdown(results, meta))
    return paths
