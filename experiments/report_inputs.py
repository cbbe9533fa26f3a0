"""The inputs of `evogemm report`, read into plain data: a campaign folder (campaign.db), a bench
result (bench.json, or a folder holding one) and an ablation folder (ablation.json). Each becomes
a `Section`: summary lines, a per-shape table and the data of each figure the input can give
(experiments/plots.py draws them)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from evaluator.api import BaselineSet, Measurement, Timing
from genome import Problem

from .plots import (NOMINAL_HBM_TBPS, PEAK_TFLOPS, ConvergenceData, Curve, Ratio, RooflineData, RoofPoint,
                    SpeedupData, WeightSegment, WeightsData)

KERNEL_SERIES = "best evolved kernel"
VENDOR_SERIES = "best vendor baseline"


class NotAReportInput(ValueError):
    """A path that is none of: campaign folder, bench JSON (or its folder), ablation folder."""


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    kind: str                 # campaign | bench | ablation
    source: str
    simulated: bool
    lines: list[str] = field(default_factory=list)
    table: "Table | None" = None
    speedup: "SpeedupData | None" = None
    convergence: "ConvergenceData | None" = None
    weights: "WeightsData | None" = None
    roofline: "RooflineData | None" = None


EXPECTED = ("a campaign folder (with campaign.db), a bench result JSON (the bench.json of `evogemm bench --out`, "
            "or its folder) or an ablation folder (with ablation.json)")


def input_kind(path: "str | Path") -> str:
    """'campaign', 'bench' or 'ablation'; NotAReportInput (saying what was expected) otherwise."""
    p = Path(path)
    if not p.exists():
        raise NotAReportInput(f"{p}: no such file or folder; expected {EXPECTED}")
    if p.is_dir():
        if (p / "campaign.db").is_file():
            return "campaign"
        if (p / "ablation.json").is_file():
            data = _read_json(p / "ablation.json")
            if not (isinstance(data, dict) and "summary" in data and "runs" in data):
                raise NotAReportInput(f"{p / 'ablation.json'}: JSON, but not an ablation result ('summary' and "
                                      f"'runs', as `evogemm ablate --out` writes it); expected {EXPECTED}")
            return "ablation"
        if (p / "bench.json").is_file():
            return "bench"
        raise NotAReportInput(f"{p}: a folder with no campaign.db, ablation.json or bench.json; expected {EXPECTED}")
    data = _read_json(p)
    if isinstance(data, dict) and isinstance(data.get("shapes"), list) and isinstance(data.get("meta"), dict) \
            and all(isinstance(s, dict) and "baselines" in s and "problem" in s for s in data["shapes"]):
        return "bench"
    if isinstance(data, dict) and "summary" in data and "runs" in data:
        return "ablation"
    raise NotAReportInput(f"{p}: JSON, but not a bench result ('meta' and 'shapes' with 'problem' and "
                          f"'baselines'); expected {EXPECTED}")


def load_section(path: "str | Path") -> Section:
    p = Path(path)
    kind = input_kind(p)
    if kind == "campaign":
        from evolution.db import CampaignDB
        with CampaignDB(p / "campaign.db", readonly=True) as db:
            return campaign_section(db, str(p))
    if kind == "ablation":
        return ablation_section(_read_json(p / "ablation.json" if p.is_dir() else p), str(p))
    return bench_section(_read_json(p / "bench.json" if p.is_dir() else p), str(p))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except UnicodeDecodeError as exc:
        raise NotAReportInput(f"{path}: not UTF-8 text (byte {exc.start}); expected {EXPECTED}") from exc
    except json.JSONDecodeError as exc:
        raise NotAReportInput(f"{path}: not JSON ({exc}); expected {EXPECTED}") from exc


def fmt_us(us: "float | None") -> str:
    if us is None:
        return "-"
    return f"{us / 1000:.3f} ms" if us >= 10000 else f"{us:.2f} us"


def _spread_ratio(base: Timing, base_us: float, kernel: "Timing | None", kernel_us: float) -> Ratio:
    """baseline / kernel with its range. Timed in the same interleaved rounds (as many samples): the
    range of the per-round ratios. Otherwise: each side's own range (10th-90th percentile of its
    samples when it has 10 or more, else min-max), slowest baseline over fastest kernel and back.
    The relative range is applied to `base_us / kernel_us` (the times the search ranks by)."""
    value = base_us / kernel_us
    if kernel is None:
        return Ratio(value)
    a, b = base.samples_us or [], kernel.samples_us or []
    if len(a) == len(b) >= 2 and all(x > 0 for x in a + b):
        ratios = sorted(x / y for x, y in zip(a, b))
        mid = _percentile(ratios, 0.5)
        return Ratio(value, value * ratios[0] / mid, value * ratios[-1] / mid)
    base_lo, base_hi = _bounds(base)
    k_lo, k_hi = _bounds(kernel)
    if None in (base_lo, base_hi, k_lo, k_hi) or not base.median_us or not kernel.median_us or not k_lo:
        return Ratio(value)
    low = value * (base_lo / base.median_us) * (kernel.median_us / k_hi)
    high = value * (base_hi / base.median_us) * (kernel.median_us / k_lo)
    return Ratio(value, low, high)


def _bounds(t: Timing) -> "tuple[float | None, float | None]":
    samples = sorted(t.samples_us or [])
    if len(samples) >= 10:
        return _percentile(samples, 0.1), _percentile(samples, 0.9)
    return t.min_us, t.max_us


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    pos = q * (len(sorted_values) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _roof_points(problem: Problem, kernel_us: "float | None", vendor_us: "float | None") -> dict[str, RoofPoint]:
    intensity = problem.flops / problem.min_bytes
    out = {}
    for key, us in ((KERNEL_SERIES, kernel_us), (VENDOR_SERIES, vendor_us)):
        if us:
            out[key] = RoofPoint(problem.name, intensity, problem.flops / (us * 1e-6) / 1e12)
    return out


def _speedup_table(rows: Sequence[tuple[str, "float | None", Mapping[str, float], "str | None"]],
                   names: Sequence[str], extra: Sequence[str] = (),
                   extra_cells: "Sequence[Sequence[str]] | None" = None) -> Table:
    """shape | best kernel | each baseline (time, speedup) | vs best vendor [| extra]."""
    headers = ["shape", "best kernel"] + [f"{n} (speedup)" for n in names] + ["vs best vendor", *extra]
    out = []
    for i, (shape, best_us, baselines, _vendor) in enumerate(rows):
        cells = [shape, fmt_us(best_us)]
        for n in names:
            us = baselines.get(n)
            cells.append("-" if us is None else (f"{fmt_us(us)} ({us / best_us:.3f}x)" if best_us else fmt_us(us)))
        vendor = min(baselines.values()) if baselines else None
        cells.append(f"{vendor / best_us:.3f}x" if vendor and best_us else "-")
        out.append(cells + list(extra_cells[i] if extra_cells else []))
    return Table(headers, out)


def _geomean(xs: Sequence[float]) -> "float | None":
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


# -- a campaign ------------------------------------------------------------------------------------

def campaign_section(db: Any, source: str) -> Section:
    """Everything the report draws from a campaign database (open, read-only or not)."""
    config = db.get_meta("config") or {}
    simulated = bool(db.get_meta("simulated"))
    shapes = [row["problem"] for row in db.shape_rows()]
    names = sorted({n for s in shapes for n in ((db.baselines(s) or BaselineSet(s)).device)})
    series: dict[str, list[Ratio | None]] = {n: [] for n in names}
    verified_series: list[Ratio | None] = []
    table_rows, curves, segments, roof = [], [], [], {KERNEL_SERIES: [], VENDOR_SERIES: []}
    offset, confirmed = 0, False
    for shape in shapes:
        problem = Problem.parse(shape)
        bs = db.baselines(shape)
        standing = db.best_standing(shape)   # at its confirming measurement, as the hall of fame holds it
        confirmed = confirmed or bool(standing and standing[2])
        m = standing[1] if standing else None
        t = m.time_us if m else None
        vendor = bs.best_vendor_us if bs else None
        for n in names:
            base = bs.device.get(n) if bs else None
            series[n].append(_spread_ratio(base, base.median_us, m.device, t) if base and t else None)
        verified_series.append(_verified_ratio(db.verified(shape)))
        table_rows.append((shape, t, {n: tm.median_us for n, tm in (bs.device if bs else {}).items()}, None))
        for key, point in _roof_points(problem, t, vendor).items():
            roof[key].append(point)
        rows = db.evaluation_rows(shape)
        curves.append(Curve(shape, *_best_so_far(rows, vendor)))
        log = db.policy_log(shape)
        if log:
            seqs = sorted(r["seq"] for r in rows if r["seq"] is not None)
            xs = [offset + _count_below(seqs, entry["seq"]) for entry in log]
            arms = sorted({a for entry in log for a in entry["probabilities"]})
            segments.append(WeightSegment(shape, xs, {a: [float(e["probabilities"].get(a, 0.0)) for e in log]
                                                      for a in arms}, offset + len(rows), offset))
        offset += len(rows)
    if any(verified_series):
        series["best vendor, re-verified interleaved"] = verified_series
    name = config.get("name") or Path(source).name
    section = Section(title=f"Campaign {name}", kind="campaign", source=source, simulated=simulated)
    from .report import campaign_status, headline_lines
    section.lines = [f"evaluator: {db.get_meta('evaluator_description') or '-'}",
                     f"seed {config.get('seed')}, strategy `{(config.get('strategy') or {}).get('name')}`, policy "
                     f"`{(config.get('selection') or {}).get('policy')}`; {db.evaluation_count()} evaluations over "
                     f"{len(shapes)} shapes"]
    section.lines += headline_lines(campaign_status(db))   # the re-verified figures first, as in report.md
    section.lines.append(f"roofline memory roof: {NOMINAL_HBM_TBPS:g} TB/s nominal (a campaign measures no "
                         "bandwidth)")
    section.table = _speedup_table(table_rows, names)
    if any(any(v is not None for v in vals) for vals in series.values()):
        section.speedup = SpeedupData(f"{name}: best kernel vs each baseline", shapes, series, None, simulated)
    if len([c for c in curves if c.y]) > 1:
        curves.append(_geomean_curve(curves))
    if any(c.y for c in curves):
        title = f"{name}: convergence per shape" + (" (search measurements, before confirmation)" if confirmed else "")
        section.convergence = ConvergenceData(title, curves, "evaluations of the shape", simulated=simulated)
    if segments:
        policy = (config.get("selection") or {}).get("policy") or "policy"
        section.weights = WeightsData(f"{name}: operator weights ({policy}) over the campaign", segments,
                                      simulated=simulated)
    if roof[KERNEL_SERIES] or roof[VENDOR_SERIES]:
        section.roofline = RooflineData(f"{name}: roofline", roof, NOMINAL_HBM_TBPS, "nominal, H200 datasheet",
                                        PEAK_TFLOPS, simulated, pair=(KERNEL_SERIES, VENDOR_SERIES))
    return section


def _best_so_far(rows: Sequence[Mapping[str, Any]], vendor_us: "float | None") -> tuple[list[float], list[float]]:
    """(evaluation number, best vendor / best time so far) from the first passing evaluation on."""
    xs, ys, best = [], [], math.inf
    if not vendor_us:
        return xs, ys
    for i, r in enumerate(rows, 1):
        if r["status"] == "ok" and r["device_us"]:
            best = min(best, float(r["device_us"]))
        if math.isfinite(best):
            xs.append(float(i))
            ys.append(vendor_us / best)
    return xs, ys


def _geomean_curve(curves: Sequence[Curve]) -> Curve:
    """The geomean over shapes of the best-so-far speedup after i evaluations of each shape (a shape
    that stopped earlier keeps its final figure), from the first i at which every shape has one."""
    with_data = [c for c in curves if c.y]
    by_x = [dict(zip(c.x, c.y)) for c in with_data]
    n = int(max(max(c.x) for c in with_data))
    xs, ys = [], []
    for i in range(1, n + 1):
        vals = [d.get(float(i), c.y[-1] if i > c.x[-1] else None) for d, c in zip(by_x, with_data)]
        if all(v is not None for v in vals):
            xs.append(float(i))
            ys.append(_geomean(vals))
    return Curve(f"geomean over {len(with_data)} shapes", xs, ys, emphasis=True)


def _count_below(sorted_seqs: Sequence[int], seq: "int | None") -> int:
    if seq is None:
        return len(sorted_seqs)
    import bisect
    return bisect.bisect_left(sorted_seqs, seq)


def _verified_ratio(verified: "tuple[BaselineSet, list[Measurement]] | None") -> "Ratio | None":
    if not verified:
        return None
    bs, ms = verified
    ok = [m for m in ms if m.ok and m.time_us]
    vendor = bs.best("device")
    if not ok or not vendor:
        return None
    m = min(ok, key=lambda m: m.time_us)
    return _spread_ratio(bs.device[vendor[0]], vendor[1], m.device, m.time_us)


# -- a bench result ----------------------------------------------------------------------------------

def bench_section(data: Mapping[str, Any], source: str) -> Section:
    meta = data.get("meta") or {}
    simulated = bool(meta.get("simulated"))
    shapes, rows, extra_cells = [], [], []
    names = sorted({n for s in data["shapes"] for n in (s.get("baselines") or {}).get("device", {})})
    series: dict[str, list[Ratio | None]] = {n: [] for n in names}
    paired: list[Ratio | None] = []
    noise: list[tuple[float, float] | None] = []
    roof: dict[str, list[RoofPoint]] = {KERNEL_SERIES: [], VENDOR_SERIES: []}
    for s in data["shapes"]:
        problem = Problem.parse(s["problem"])
        shapes.append(problem.name)
        bs = BaselineSet.from_dict(s.get("baselines") or {"problem": problem.name})
        m = _bench_best(s)
        t = m.time_us if m else None
        for n in names:
            base = bs.device.get(n)
            series[n].append(_spread_ratio(base, base.median_us, m.device, t) if base and t else None)
        focused = s.get("focused") or {}
        p = focused.get("paired") or s.get("paired_vs_best_vendor")
        paired.append(Ratio(p["median"], p.get("low"), p.get("high")) if p and p.get("median") else None)
        aa = focused.get("aa") or bs.aa
        noise.append((aa["low"], aa["high"]) if aa and aa.get("low") and aa.get("high") else None)
        for key, point in _roof_points(problem, t, bs.best_vendor_us).items():
            roof[key].append(point)
        rows.append((problem.name, t, {n: tm.median_us for n, tm in bs.device.items()}, None))
        extra_cells.append([_range(p), _range(aa)])
    if any(paired):
        series["best vendor, paired per round"] = paired
    hbm, measured = meta.get("hbm_tbps"), bool(meta.get("hbm_tbps"))
    hbm_label = str(meta.get("hbm_source") or "measured") if measured else "nominal, H200 datasheet"
    hbm = float(hbm) if measured else NOMINAL_HBM_TBPS
    peak = float(meta.get("peak_tflops") or PEAK_TFLOPS)
    name = Path(source).stem if Path(source).suffix else Path(source).name
    section = Section(title=f"Bench {name}", kind="bench", source=source, simulated=simulated)
    section.lines = [f"device: {meta.get('device', '-')}; date {meta.get('date', '-')}",
                     f"command: `{meta.get('command', '-')}`"]
    agg = (data.get("aggregate") or {}).get("best_vendor") or {}
    if agg.get("geomean"):
        section.lines.append(f"vs best vendor: geomean {agg['geomean']:.3f}x, wins {agg.get('wins')}/"
                             f"{agg.get('shapes')}, worst {agg.get('worst', 0):.3f}x ({agg.get('worst_shape')})")
    section.lines.append(f"roofline: {peak:g} TFLOP/s and HBM {hbm:g} TB/s ({hbm_label})")
    section.table = _speedup_table(rows, names, ["paired [range]", "A/A [range]"], extra_cells)
    if names:
        section.speedup = SpeedupData(f"{name}: best kernel vs each baseline", shapes, series,
                                      noise if any(noise) else None, simulated)
    if roof[KERNEL_SERIES] or roof[VENDOR_SERIES]:
        section.roofline = RooflineData(f"{name}: roofline", roof, hbm, hbm_label, peak, simulated,
                                        pair=(KERNEL_SERIES, VENDOR_SERIES))
    return section


def _bench_best(shape: Mapping[str, Any]) -> "Measurement | None":
    ms = []
    for k in shape.get("kernels") or []:
        m = Measurement.from_dict(k["measurement"])
        if m.ok and m.time_us:
            ms.append(((k.get("genome") or {}).get("id"), m))
    chosen = [m for gid, m in ms if gid and gid == shape.get("best")]
    if chosen:
        return chosen[0]
    return min((m for _, m in ms), key=lambda m: m.time_us, default=None)


def _range(d: "Mapping[str, Any] | None") -> str:
    if not d or not d.get("median"):
        return "-"
    return f"{d['median']:.3f} [{d.get('low', 0):.3f}-{d.get('high', 0):.3f}]"


# -- an ablation ---------------------------------------------------------------------------------------

def ablation_section(data: Mapping[str, Any], source: str) -> Section:
    """Per strategy: the geomean over shapes of the best-so-far speedup, mean over seeds, min-max band."""
    meta, summary, runs = data.get("meta") or {}, data.get("summary") or {}, data.get("runs") or []
    strategies = list(meta.get("strategies") or summary.get("table") or sorted({r["strategy"] for r in runs}))
    curves = []
    for strat in strategies:
        per_seed = [g for g in (_run_geomeans(r) for r in runs if r["strategy"] == strat) if g]
        if not per_seed:
            continue
        n = min(len(g) for g in per_seed)
        xs, mean, low, high = [], [], [], []
        for i in range(n):
            vals = [g[i] for g in per_seed if g[i] is not None]
            if len(vals) != len(per_seed):
                continue
            xs.append(float(i + 1))
            mean.append(sum(vals) / len(vals))
            low.append(min(vals))
            high.append(max(vals))
        curves.append(Curve(f"{strat} ({len(per_seed)} seeds)", xs, mean, low, high))
    shapes = list(summary.get("shapes") or [])
    table = summary.get("table") or {}
    section = Section(title="Ablation " + Path(source).name, kind="ablation", source=source, simulated=True)
    section.lines = [f"campaign `{meta.get('campaign', '-')}`; budget {meta.get('budget', '-')} evaluations per "
                     f"shape; seeds {', '.join(map(str, meta.get('seeds') or []))}; RL policy `{meta.get('policy')}`",
                     "ablations run on the analytic simulator: every figure is simulated"]
    headers = ["shape", *table]
    rows = [[s] + [f"{table[t]['per_shape_mean_speedup'][s]:.4f}" if s in table[t].get("per_shape_mean_speedup", {})
                   else "-" for t in table] for s in shapes]
    rows.append(["geomean (mean ± std over seeds)"] + [
        f"{table[t]['geomean_speedup_mean']:.4f} ± {table[t].get('geomean_speedup_std') or 0:.4f}"
        if table[t].get("geomean_speedup_mean") else "-" for t in table])
    section.table = Table(headers, rows)
    if curves:
        section.convergence = ConvergenceData(
            f"Ablation: convergence per strategy, geomean over {len(shapes)} shapes", curves,
            "evaluations per shape", "best-so-far speedup vs best vendor (mean over seeds, band min-max)",
            simulated=True)
    return section


def _run_geomeans(run: Mapping[str, Any]) -> "list[float | None]":
    """After each evaluation (per shape), the geomean over shapes of best vendor / best so far."""
    shapes = [d for d in (run.get("shapes") or {}).values() if d.get("vendor_us") and d.get("curve")]
    if not shapes:
        return []
    n = min(len(d["curve"]) for d in shapes)
    out: list[float | None] = []
    for i in range(n):
        vals = [d["vendor_us"] / d["curve"][i] for d in shapes if d["curve"][i]]
        out.append(_geomean(vals) if len(vals) == len(shapes) else None)
    return out
