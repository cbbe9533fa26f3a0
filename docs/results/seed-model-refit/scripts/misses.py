"""Where the shipped seed model's favourite (the lowest predicted time at a shape) is more than 3% behind the
measured best, by shape class and by the two kernels' families. usage: python .../misses.py RECORDS.json"""
import sys
import json, numpy as np
from collections import Counter, defaultdict
from evaluator import sim_fit
from evaluator.sim_device import get_device, resolve_calibration
raw = sim_fit.load_records(sys.argv[1])
recs, fams = [], []
for r in raw:
    got, _ = sim_fit._parse_records([r])
    if got: recs += got; fams.append(r['genome']['family'])
pred = sim_fit._predict(recs, resolve_calibration(None)[0], get_device('h200'))
by = defaultdict(list)
for i, r in enumerate(recs): by[r.problem.name].append(i)
def cls(p):
    m, n, k = p.m, p.n, p.k
    if m <= 64 or n <= 64: return 'skinny (M or N <= 64)'
    if k % 64 and (2 * k) % 128: return 'K pitch not 128 B'
    if 2 * m * n * k < 2e10: return 'small (< 20 GFLOP)'
    return 'large'
tot, miss, loss = Counter(), Counter(), defaultdict(list)
fam_pair = Counter()
for name, idx in by.items():
    if len(idx) < 3: continue
    meas = np.array([recs[i].time_us for i in idx]); pr = pred[idx]
    pick = idx[int(np.argmin(pr))]; best = idx[int(np.argmin(meas))]
    c = cls(recs[idx[0]].problem); tot[c] += 1
    ratio = recs[pick].time_us / meas.min()
    if ratio > 1.03:
        miss[c] += 1; loss[c].append(ratio)
        fam_pair[(fams[pick], fams[best])] += 1
print('| shape class | shapes | favourite > 3% behind the measured best | geomean of those (favourite / best) |')
print('|---|---|---|---|')
for c in tot:
    g = float(np.exp(np.mean(np.log(loss[c])))) if loss[c] else 1.0
    print(f'| {c} | {tot[c]} | {miss[c]} | {g:.3f} |')
print()
print('| model favourite family | measured best family | shapes |'); print('|---|---|---|')
for (a, b), n in fam_pair.most_common(12): print(f'| {a} | {b} | {n} |')
