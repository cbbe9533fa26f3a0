"""Fit the simulator's SimParams (evaluator.sim_fit.FIT_BOUNDS, from the shipped h200.json, Powell, 2000
evaluations) with a within-shape loss: each shape's mean log error is removed before squaring, so only the
ranking of kernels within a shape counts, not their absolute times. evaluator.sim_fit's own fit minimises the
plain squared log error; this is the variant tried beside it.
usage (repository root): python docs/results/seed-model-refit/scripts/fit_centred.py RECORDS.json GROUP OUT.json"""
import math
import sys

import numpy as np
from scipy.optimize import minimize

from evaluator import sim_fit
from evaluator.sim_device import SimParams, get_device, resolve_calibration, save_calibration


def main(records_json: str, group: str, out: str) -> None:
    recs, _ = sim_fit._parse_records(sim_fit.load_records(records_json, [group]))
    dev, start = get_device("h200"), resolve_calibration(None)[0]
    names, base = list(sim_fit.FIT_BOUNDS), start.to_dict()
    lo = np.array([math.log(sim_fit.FIT_BOUNDS[n][0]) for n in names])
    hi = np.array([math.log(sim_fit.FIT_BOUNDS[n][1]) for n in names])
    x0 = np.clip(np.array([math.log(base[n]) for n in names]), lo, hi)
    log_meas = np.log([r.time_us for r in recs])
    shape_of = {}
    idx = np.array([shape_of.setdefault(r.problem.name, len(shape_of)) for r in recs])
    counts = np.bincount(idx)

    def make(x):
        values = dict(base)
        values.update({n: float(math.exp(v)) for n, v in zip(names, np.clip(x, lo, hi))})
        return SimParams(**values)

    def loss(x):
        err = np.log(sim_fit._predict(recs, make(x), dev)) - log_meas
        err = err - (np.bincount(idx, err) / counts)[idx]
        return float(np.mean(err * err) + 1e-3 * np.mean((x - x0) ** 2))

    f0 = loss(x0)
    res = minimize(loss, x0, method="Powell", bounds=list(zip(lo, hi)),
                   options={"maxfev": 2000, "xtol": 1e-3, "ftol": 1e-7})
    print("loss", f0, "->", res.fun)
    save_calibration(make(res.x if res.fun < f0 else x0), out, {"note": f"within-shape centred fit on group {group}"})


if __name__ == "__main__":
    main(*sys.argv[1:4])
