"""Out of sample: the first round of campaign-A.yaml (as shipped) and of campaign-B.yaml (cross_screen 4, with
cross_screen.patch) at six shapes no run had measured, the best kernel of each at each shape: python cross.py"""
import json
import math
from pathlib import Path

HERE = Path(__file__).parent
arms = {arm: json.loads((HERE / f"first-round-{arm}-by-shape.json").read_text()) for arm in "AB"}
bench = json.loads((HERE / "bench" / "bench.json").read_text())
logs = {"A": 0.0, "B": 0.0, "every kernel": 0.0}
print("| shape | best vendor (us) | A: as shipped | B: cross_screen 4 | every kernel of both | B / A |")
print("|---|---|---|---|---|---|")
for s in bench["shapes"]:
    shape = s["problem"]
    vendor = min(b["median_us"] for b in s["baselines"]["device"].values() if b)
    t = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"] if k["measurement"].get("device")}
    best = {arm: min(t[g] for g in ids[shape] if g in t) for arm, ids in arms.items()}
    best["every kernel"] = min(t.values())
    for k, v in best.items():
        logs[k] += math.log(vendor / v)
    print(f"| {shape} | {vendor:.2f} | " + " | ".join(f"{v:.2f} ({vendor / v:.3f})" for v in best.values())
          + f" | {best['A'] / best['B']:.3f} |")
n = len(bench["shapes"])
print("| geomean vs best vendor | | " + " | ".join(f"{math.exp(v / n):.3f}" for v in logs.values()) + " | |")
