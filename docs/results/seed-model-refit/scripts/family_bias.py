"""A per-family bias correction of the shipped seed model (each family's median log error on one half of the shapes,
alone or split skinny / not skinny), scored on the other half. usage: python .../family_bias.py RECORDS.json"""
import sys
import json, numpy as np
from collections import defaultdict
from evaluator import sim_fit
from evaluator.sim_device import get_device, resolve_calibration
raw = sim_fit.load_records(sys.argv[1])
recs, fams, grp = [], [], []
for r in raw:
    got, _ = sim_fit._parse_records([r])
    if got: recs += got; fams.append(r['genome']['family']); grp.append(r['group'])
pred = sim_fit._predict(recs, resolve_calibration(None)[0], get_device('h200'))
meas = np.array([r.time_us for r in recs]); fams = np.array(fams); grp = np.array(grp)
skinny = np.array([r.problem.m <= 64 or r.problem.n <= 64 for r in recs])
def score(p, mask):
    by = defaultdict(list)
    for i in np.nonzero(mask)[0]: by[recs[i].problem.name].append(i)
    hits = sp = 0; n = 0; behind = []
    for idx in by.values():
        if len(idx) < 3: continue
        idx = np.array(idx); n += 1
        pick = idx[np.argmin(p[idx])]; b = meas[idx].min()
        hits += meas[pick] <= 1.03 * b; behind.append(meas[pick] / b)
        sp += sim_fit.spearman(p[idx], meas[idx])
    return f'{hits}/{n} within 3%, Spearman {sp/n:.3f}, favourite/best geomean {np.exp(np.mean(np.log(behind))):.3f}'
for fit, test in (('A', 'B'), ('B', 'A')):
    corr = {}
    for scope in ('all', 'skinny-split'):
        p = pred.copy()
        for f in set(fams):
            if scope == 'all':
                m = (fams == f) & (grp == fit)
                c = np.median(np.log(meas[m] / pred[m])) if m.sum() >= 5 else 0.0
                p[fams == f] *= np.exp(c)
            else:
                for sk in (True, False):
                    m = (fams == f) & (grp == fit) & (skinny == sk)
                    c = np.median(np.log(meas[m] / pred[m])) if m.sum() >= 5 else 0.0
                    p[(fams == f) & (skinny == sk)] *= np.exp(c)
        print(f'fit {fit} test {test} [{scope}]')
        print('   shipped  all:', score(pred, grp == test), '| skinny:', score(pred, (grp == test) & skinny))
        print('   corrected all:', score(p, grp == test), '| skinny:', score(p, (grp == test) & skinny))
