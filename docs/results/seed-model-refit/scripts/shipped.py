"""What misses.py and family_bias.py share: the records of records.py priced by the shipped seed model, and, per
shape, the kernel it prices fastest against the measured fastest."""
from collections import defaultdict

import numpy as np

from evaluator import sim_fit
from evaluator.sim_device import get_device, resolve_calibration


def load(path: str):
    """(records the models price, their families, their groups, measured us, the shipped model's us), in file
    order; a record no model prices is left out, as sim_fit leaves it out."""
    recs, fams, groups = [], [], []
    for raw in sim_fit.load_records(path):
        parsed, _ = sim_fit._parse_records([raw])
        if parsed:
            recs += parsed
            fams.append(raw["genome"]["family"])
            groups.append(raw["group"])
    pred = sim_fit._predict(recs, resolve_calibration(None)[0], get_device("h200"))
    return recs, np.array(fams), np.array(groups), np.array([r.time_us for r in recs]), pred


def favourites(recs, meas, pred, mask):
    """Per shape with at least 3 records under `mask`: (its record indices, the model's favourite, the measured
    best), in order of first appearance."""
    by = defaultdict(list)
    for i in np.nonzero(mask)[0]:
        by[recs[i].problem.name].append(i)
    for idx in by.values():
        if len(idx) >= 3:
            idx = np.array(idx)
            yield idx, idx[int(np.argmin(pred[idx]))], idx[int(np.argmin(meas[idx]))]
