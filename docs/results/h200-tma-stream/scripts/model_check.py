"""The skinny_tma simulator model against the prototype's H100 runs (h100-s45/skinny_tma.json, the 3-D-box
configurations and the 2-D ones alike; the family builds the 2-D loads): Spearman pooled and within each shape,
and how far the model's pick is from the measured best. usage: python model_check.py [skinny_tma.json]"""
import json
import re
import sys
from pathlib import Path

from scipy.stats import spearmanr

from evaluator.sim_device import DEVICES, SimParams
from evaluator.sim_skinny_tma import model
from genome import Problem

path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "h100-s45" / "skinny_tma.json"
runs = json.loads(path.read_text())["shapes"]
dev, sp = DEVICES["h100"], SimParams()
pooled_m, pooled_s, within, picks = [], [], [], []
for shape, r in runs.items():
    meas, pred = [], []
    for name, t in r["median_us"].items():
        m = re.match(r"R(\d+)_D(\d+)_S(\d+)_W(\d+)_g(\d+)", name)
        if not m:
            continue
        rows, pieces, stages, warps, grid = map(int, m.groups())
        blocks = -(-max(map(int, shape.split("x")[:2])) // rows)
        params = dict(rows=rows, pieces=pieces, stages=stages, consumer_warps=warps,
                      ctas_per_sm=1 if grid <= min(blocks, dev.n_sms) else 2)
        meas.append(t)
        pred.append(model(params, Problem.parse(shape), sp, dev).total_us)
    rho = spearmanr(meas, pred).statistic
    within.append(rho)
    best = min(meas)
    picks.append(meas[pred.index(min(pred))] / best)
    pooled_m += meas
    pooled_s += pred
    print(f"{shape:16s} n={len(meas):2d}  spearman {rho:5.2f}  pick/best {picks[-1]:.3f}  "
          f"measured best {best:6.2f} us  predicted best {min(pred):6.2f} us")
print(f"pooled spearman {spearmanr(pooled_m, pooled_s).statistic:.2f}, median within-shape "
      f"{sorted(within)[len(within) // 2]:.2f}, worst pick/best {max(picks):.3f}")

# the family's protocol bench (h100-s45/bench): its nine seeds at each of 14 shapes
bench = Path(__file__).resolve().parent.parent / "h100-s45" / "bench" / "bench.json"
if bench.is_file():
    import math
    rhos, logs = [], []
    for s in json.loads(bench.read_text())["shapes"]:
        meas, pred = [], []
        for k in s["kernels"]:
            g, m = k["genome"], k["measurement"]
            if g["family"] == "skinny_tma" and m.get("status") == "ok":
                meas.append(m["device"]["median_us"])
                pred.append(model(g["params"], Problem.parse(s["problem"]), sp, dev).total_us)
        rhos.append(spearmanr(meas, pred).statistic)
        logs.append(math.log(meas[pred.index(min(pred))] / min(meas)))
        print(f"bench {s['problem']:16s} spearman {rhos[-1]:5.2f}  pick/best {math.exp(logs[-1]):.3f}  "
              f"measured best {min(meas):6.2f} us  predicted best {min(pred):6.2f} us")
    print(f"bench: median within-shape spearman {sorted(rhos)[len(rhos) // 2]:.2f}, "
          f"pick/best geomean {math.exp(sum(logs) / len(logs)):.3f}, worst {math.exp(max(logs)):.3f}")
