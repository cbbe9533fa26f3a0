"""Simulator calibration and command line: fit SimParams, rank a model against measurements.

`fit_calibration` / `calibrate_file` fit `SimParams` to measured device times; `rank_report`
says how well the models rank measured kernels (Spearman, pooled and within each shape).

Measurement records are a JSON list (or {"records": [...]}) of
    {"genome": {<Genome.to_dict()>}, "problem": "MxNxK", "time_us": <device median, us>,
     "group": "<optional label, for --groups>"}
Each record is predicted by its genome's family model (`TemplateFamily.simulator_model`);
records of families without a model, invalid genomes and non-positive times are skipped.

CLI:  python -m evaluator.sim_fit calibrate MEASUREMENTS.json OUT.json [--groups a,b]
      python -m evaluator.sim_fit check MEASUREMENTS.json [--calibration C.json] [--groups a,b]
      python -m evaluator.sim_fit predict GENOME.json MxNxK
      python -m evaluator.sim_fit baselines MxNxK
calibrate, check and predict take --family package.module:NAME (repeatable) for plug-in families.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from genome import Genome, Problem
from templates import FamilyRegistry, family_registry

from .sim_device import DeviceSpec, SimParams, get_device, resolve_calibration, save_calibration
from .sim_vendor import simulate_baselines
from .simulator import FamilyModels, ModelFn, simulate_breakdown

# Fields fitted by `fit_calibration` and their bounds. Vendor and derived-timing fields are not
# fitted from candidate measurements (they do not affect candidate times).
FIT_BOUNDS: dict[str, tuple[float, float]] = {
    "mma_clock_efficiency": (0.5, 1.0),
    "smem_operand_bytes_per_clk": (48.0, 256.0),
    "wgmma_issue_clk": (0.25, 16.0),
    "k_iter_overhead_clk": (4.0, 400.0),
    "cluster_iter_overhead_clk": (1.0, 200.0),
    "pingpong_mma_efficiency": (0.7, 1.0),
    "sm_ingress_bytes_per_clk": (16.0, 256.0),
    "load_latency_us": (0.1, 3.0),
    "miss_latency_us": (0.05, 3.0),
    "hbm_efficiency": (0.6, 1.2),
    "l2_bw_ratio": (1.2, 6.0),
    "l2_usable_fraction": (0.3, 1.0),
    "dram_interference": (0.01, 1.0),
    "roofline_sharpness": (1.5, 16.0),
    "epilogue_fixed_us": (0.01, 2.0),
    "epilogue_bytes_per_clk": (8.0, 256.0),
    "nosmem_epilogue_factor": (0.7, 3.0),
    "pingpong_epilogue_hidden": (0.2, 1.0),
    "streamk_fixup_us": (0.05, 5.0),
    "streamk_workspace_us": (0.05, 5.0),
    "streamk_scheduler_us": (0.01, 3.0),
    "deterministic_reduction_factor": (1.0, 3.0),
    "nondeterministic_chain_factor": (0.1, 1.5),
    "splitk_sync_us": (0.05, 5.0),
    "launch_us": (0.5, 5.0),
    "prologue_us": (0.01, 3.0),
    "cluster_launch_us": (0.01, 2.0),
}


def _rankdata(a: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank."""
    a = np.asarray(a, dtype=float).ravel()
    sorter = np.argsort(a, kind="mergesort")
    inv = np.empty(a.size, dtype=np.intp)
    inv[sorter] = np.arange(a.size, dtype=np.intp)
    s = a[sorter]
    obs = np.r_[True, s[1:] != s[:-1]]
    dense = obs.cumsum()[inv]
    count = np.r_[np.nonzero(obs)[0], len(obs)]
    return 0.5 * (count[dense] + count[dense - 1] + 1)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (ties get average ranks); nan if either side is constant."""
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.size != y.size:
        raise ValueError(f"spearman: {x.size} vs {y.size} values")
    if x.size < 2:
        return float("nan")
    rx, ry = _rankdata(x), _rankdata(y)
    rx -= rx.mean()
    ry -= ry.mean()
    denom = math.sqrt(float((rx * rx).sum()) * float((ry * ry).sum()))
    if denom == 0:
        return float("nan")
    return float((rx * ry).sum() / denom)


@dataclass(frozen=True)
class _Record:
    model: ModelFn
    params: dict
    problem: Problem
    time_us: float


def _parse_records(records: Iterable[Any], families: "FamilyRegistry | FamilyModels | None" = None
                   ) -> tuple[list[_Record], int]:
    """(usable records, skipped count). A record is (genome, problem, time_us) or a dict with keys
    genome / problem / time_us (genome: a Genome or a genome dict), or an already parsed _Record;
    records of a family without a simulator model, invalid genomes and non-positive times are
    skipped."""
    models = families if isinstance(families, FamilyModels) else FamilyModels(families)
    out, skipped = [], 0
    for rec in records:
        if isinstance(rec, _Record):
            out.append(rec)
            continue
        if isinstance(rec, Mapping):
            genome, problem, t = rec.get("genome"), rec.get("problem"), rec.get("time_us")
        else:
            genome, problem, t = rec
        try:
            g = genome if isinstance(genome, Genome) else Genome.from_dict(genome)
            p = Problem.parse(problem)
            t = float(t)
        except (TypeError, ValueError, KeyError):
            skipped += 1
            continue
        if not (t > 0 and math.isfinite(t)):
            skipped += 1
            continue
        try:
            model, params = models.checked(g, p)
        except ValueError:  # NoModel, or InvalidGenome for this problem
            skipped += 1
            continue
        out.append(_Record(model, params, p, t))
    return out, skipped


def _predict(records: Sequence[_Record], sp: SimParams, dev: DeviceSpec) -> np.ndarray:
    return np.array([r.model(r.params, r.problem, sp, dev).total_us for r in records])


def fit_calibration(records: Iterable[Any], start: "SimParams | None" = None,
                    fields: "Sequence[str] | None" = None, device: "str | DeviceSpec" = "h200",
                    max_evals: int = 3000, regularisation: float = 1e-3,
                    families: "FamilyRegistry | None" = None) -> SimParams:
    """Fit SimParams to measured device times by minimising the mean squared log error.

    records: (genome or genome dict, problem "MxNxK" or Problem, measured device time in us), or
    dicts {"genome", "problem", "time_us"}. Only `fields` (default: every FIT_BOUNDS field) move,
    in log space within their bounds, with a weak pull (`regularisation`) towards `start` so that
    coefficients the data does not constrain stay put. Uses scipy.optimize (Powell) when
    available, else a coordinate search.
    """
    start = start or SimParams()
    dev = get_device(device)
    recs, _ = _parse_records(records, families)
    if not recs:
        raise ValueError("fit_calibration: no usable records")
    names = list(fields) if fields else list(FIT_BOUNDS)
    for n in names:
        if n not in FIT_BOUNDS:
            raise ValueError(f"field {n!r} cannot be fitted; fittable: {', '.join(FIT_BOUNDS)}")
    base = start.to_dict()
    x0 = np.array([math.log(base[n]) for n in names])
    lo = np.array([math.log(FIT_BOUNDS[n][0]) for n in names])
    hi = np.array([math.log(FIT_BOUNDS[n][1]) for n in names])
    x0 = np.clip(x0, lo, hi)
    log_meas = np.log([r.time_us for r in recs])

    def make(x: np.ndarray) -> SimParams:
        values = dict(base)
        values.update({n: float(math.exp(v)) for n, v in zip(names, np.clip(x, lo, hi))})
        return SimParams(**values)

    def loss(x: np.ndarray) -> float:
        pred = _predict(recs, make(x), dev)
        err = np.log(pred) - log_meas
        return float(np.mean(err * err) + regularisation * np.mean((x - x0) ** 2))

    best_x, best_f = x0.copy(), loss(x0)
    try:
        from scipy.optimize import minimize  # dev dependency; optional
    except ImportError:  # pragma: no cover - exercised only without scipy
        minimize = None
    if minimize is not None:
        res = minimize(loss, x0, method="Powell", bounds=list(zip(lo, hi)),
                       options={"maxfev": max_evals, "xtol": 1e-3, "ftol": 1e-7})
        if res.fun < best_f:
            best_x, best_f = np.clip(res.x, lo, hi), float(res.fun)
    else:
        best_x, best_f = _coordinate_search(loss, x0, lo, hi, max_evals)
    return make(best_x)


def _coordinate_search(loss, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray, max_evals: int) -> tuple[np.ndarray, float]:
    """Fallback optimiser: try steps up and down each coordinate, halve the step when stuck."""
    x, f = x0.copy(), loss(x0)
    evals, step = 1, 0.5
    while evals < max_evals and step > 1e-3:
        improved = False
        for i in range(x.size):
            for sign in (1.0, -1.0):
                y = x.copy()
                y[i] = min(hi[i], max(lo[i], y[i] + sign * step))
                if y[i] == x[i]:
                    continue
                fy = loss(y)
                evals += 1
                if fy < f:
                    x, f, improved = y, fy, True
                    break
            if evals >= max_evals:
                break
        if not improved:
            step /= 2
    return x, f


def _fit_report(recs: Sequence[_Record], sp: SimParams, dev: DeviceSpec) -> tuple[float, float]:
    pred = _predict(recs, sp, dev)
    meas = np.array([r.time_us for r in recs])
    return spearman(pred, meas), float(np.mean(np.abs(np.log(pred) - np.log(meas))))


def rank_report(records: Iterable[Any], params: "SimParams | None" = None, device: str = "h200",
                families: "FamilyRegistry | None" = None) -> dict[str, Any]:
    """How well the model ranks measured kernels: Spearman over all (genome, shape) pairs, the mean
    and worst Spearman within each shape (what a search relies on), the mean absolute log error,
    on how many shapes the model's favourite kernel is within 3% of the measured best, and the
    measured time of that favourite over the measured best (geomean and worst over the shapes of
    three or more kernels)."""
    recs, skipped = _parse_records(records, families)
    if not recs:
        raise ValueError("no usable records")
    dev = get_device(device)
    pred = _predict(recs, params or SimParams(), dev)
    meas = np.array([r.time_us for r in recs])
    by_shape: dict[str, list[int]] = {}
    for i, r in enumerate(recs):
        by_shape.setdefault(r.problem.name, []).append(i)
    per_shape = {name: spearman(pred[idx], meas[idx]) for name, idx in by_shape.items() if len(idx) > 2}
    pick = {name: float(meas[idx][int(np.argmin(pred[idx]))] / np.min(meas[idx])) for name, idx in by_shape.items()}
    hits = sum(1 for ratio in pick.values() if ratio <= 1.03)
    values = list(per_shape.values())
    picks = [pick[name] for name in per_shape]
    return {"pairs": len(recs), "skipped": skipped, "shapes": len(by_shape),
            "spearman_pooled": spearman(pred, meas),
            "spearman_within_shape_mean": float(np.mean(values)) if values else float("nan"),
            "spearman_within_shape_min": float(np.min(values)) if values else float("nan"),
            "mean_abs_log_error": float(np.mean(np.abs(np.log(pred) - np.log(meas)))),
            "best_pick_within_3pct": f"{hits}/{len(by_shape)}",
            "best_pick_ratio_geomean": float(np.exp(np.mean(np.log(picks)))) if picks else float("nan"),
            "best_pick_ratio_worst": float(np.max(picks)) if picks else float("nan")}


def load_records(path: "str | Path", groups: "Sequence[str] | None" = None) -> list:
    """The records of a measurements JSON file, only those of `groups` if given."""
    data = json.loads(Path(path).read_text())
    if isinstance(data, Mapping) and "records" in data:
        data = data["records"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of {{genome, problem, time_us}} records")
    if groups:
        data = [r for r in data if isinstance(r, Mapping) and r.get("group") in set(groups)]
    return data


def calibrate_file(measurements_json: "str | Path", out_json: "str | Path",
                   start: "SimParams | str | Path | None" = None, device: str = "h200",
                   fields: "Sequence[str] | None" = None, max_evals: int = 3000,
                   groups: "Sequence[str] | None" = None, families: "FamilyRegistry | None" = None) -> dict[str, Any]:
    """Fit SimParams to a JSON list of {"genome", "problem", "time_us"} records; write the
    calibration JSON (format in evaluator/sim_device.py) and return the report (also its meta)."""
    src = Path(measurements_json)
    data = load_records(src, groups)
    start_params = start if isinstance(start, SimParams) else resolve_calibration(start)[0]
    dev = get_device(device)
    recs, skipped = _parse_records(data, families)
    if not recs:
        raise ValueError(f"{src}: no usable records ({skipped} skipped)")
    rho0, mle0 = _fit_report(recs, start_params, dev)
    fitted = fit_calibration(recs, start_params, fields=fields, device=dev, max_evals=max_evals)
    rho1, mle1 = _fit_report(recs, fitted, dev)
    report = {
        "source": str(src),
        "groups": list(groups) if groups else "all",
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": dev.name.lower(),
        "records": len(recs),
        "skipped": skipped,
        "fitted": list(fields) if fields else list(FIT_BOUNDS),
        "spearman_before": rho0,
        "spearman_after": rho1,
        "mean_abs_log_error_before": mle0,
        "mean_abs_log_error_after": mle1,
    }
    save_calibration(fitted, out_json, report, device=dev.name.lower())
    report["out"] = str(out_json)
    return report


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def main(argv: "Sequence[str] | None" = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m evaluator.sim_fit", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("calibrate", help="fit SimParams to measured device times")
    c.add_argument("measurements")
    c.add_argument("out")
    c.add_argument("--start", default=None, help="starting calibration (default: evaluator/calibration/h200.json)")
    c.add_argument("--device", default="h200")
    c.add_argument("--max-evals", type=int, default=3000)
    c.add_argument("--groups", default=None, help="fit only on records of these groups (comma-separated)")
    k = sub.add_parser("check", help="rank agreement of the model with measured device times")
    k.add_argument("measurements")
    k.add_argument("--calibration", default=None)
    k.add_argument("--groups", default=None, help="only records of these groups (comma-separated)")
    k.add_argument("--device", default="h200")
    p = sub.add_parser("predict", help="simulated device time of a genome JSON on a shape")
    p.add_argument("genome")
    p.add_argument("shape")
    p.add_argument("--calibration", default=None)
    p.add_argument("--device", default="h200")
    b = sub.add_parser("baselines", help="simulated vendor baselines of a shape")
    b.add_argument("shape")
    b.add_argument("--calibration", default=None)
    b.add_argument("--device", default="h200")
    for sp_ in (c, k, p):
        sp_.add_argument("--family", action="append", default=[], metavar="PACKAGE.MODULE:NAME",
                         help="a plug-in template family to know besides the built-in ones (repeatable)")
    args = ap.parse_args(argv)
    try:
        return _run(args)
    except (ValueError, OSError) as exc:  # a bad file, genome, shape or plug-in: one line, no traceback
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2


def _run(args: Any) -> int:
    families = family_registry(args.family) if getattr(args, "family", None) else None
    if args.cmd == "calibrate":
        report = calibrate_file(args.measurements, args.out, start=args.start, device=args.device,
                                max_evals=args.max_evals, groups=args.groups.split(",") if args.groups else None,
                                families=families)
        print(json.dumps(report, indent=2))
    elif args.cmd == "check":
        sp = resolve_calibration(args.calibration)[0]
        records = load_records(args.measurements, args.groups.split(",") if args.groups else None)
        print(json.dumps({"simulated": True, "calibration": args.calibration or "default",
                          **rank_report(records, sp, args.device, families=families)}, indent=2))
    elif args.cmd == "predict":
        sp = resolve_calibration(args.calibration)[0]
        bd = simulate_breakdown(Genome.load(args.genome), args.shape, sp, args.device, families=families)
        print(json.dumps({"simulated": True, **bd.to_dict()}, indent=2))
    else:
        sp = resolve_calibration(args.calibration)[0]
        print(json.dumps(simulate_baselines(args.shape, sp, args.device).to_dict(), indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
