"""Spearman rank correlation of the simulator's prediction with measured device time, per shape, over
bench JSON files; optionally with another GPC layout for the H200. Usage: simrank.py [gpc,gpc,...] FILE..."""
import json, sys
from dataclasses import replace
import scipy.stats as st
from genome import Genome, Problem
from evaluator.simulator import SimulatedEvaluator
from evaluator import sim_device
args = sys.argv[1:]
if args and "," in args[0]:
    gpcs = tuple(int(x) for x in args.pop(0).split(","))
    sim_device.DEVICES["h200"] = replace(sim_device.DEVICES["h200"], gpc_sms=gpcs)
sim = SimulatedEvaluator()
rhos = []
for f in args:
    d = json.load(open(f))
    for s in d["shapes"]:
        P = Problem.parse(s["problem"]); rows = []
        for k in s["kernels"]:
            if k["measurement"]["status"] != "ok": continue
            g = Genome.from_dict({kk: v for kk, v in k["genome"].items() if kk != "id"})
            try: rows.append((k["measurement"]["device"]["median_us"], sim.predict_us(g, P)))
            except Exception as e: pass
        if len(rows) >= 5:
            r = st.spearmanr([a for a, _ in rows], [b for _, b in rows]).statistic
            best_pred = min(rows, key=lambda r: r[1])[0] / min(a for a, _ in rows)
            rhos.append(r); print(f"{s['problem']:>18} n={len(rows):3d} rho={r:+.2f}  measured time of the sim's pick / best = {best_pred:.3f}")
print("mean rho", sum(rhos) / len(rhos))
