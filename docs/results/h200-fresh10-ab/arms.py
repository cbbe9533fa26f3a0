"""Each arm's best kernel per shape, as measured in the one bench of both arms' halls of fame
(bench.json: every shape timed the union of the two arms' halls, interleaved with the six vendor
baselines): speedup against the best vendor, and the geomean of each arm.

    python docs/results/h200-fresh10-ab/arms.py
"""
import json, statistics
from pathlib import Path
here = Path(__file__).resolve().parent
bench = json.loads((here / "bench.json").read_text())
halls = {arm: {f.stem: {e["genome"]["id"] for e in json.loads(f.read_text())}
               for f in sorted((here / f"campaign-{arm}" / "hall_of_fame").glob("*.json"))} for arm in "AB"}
ratios = {"A": [], "B": []}
print("| shape | best vendor (us) | A: before the fix (us) | A vs vendor | B: after the fix (us) | B vs vendor | B / A |")
print("|---|---|---|---|---|---|---|")
for s in bench["shapes"]:
    p = s["problem"]
    vendor = min(t["median_us"] for t in s["baselines"]["device"].values())
    times = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"]
             if k["measurement"]["status"] == "ok" and k["measurement"].get("device")}
    best = {arm: min((times[g], g) for g in halls[arm][p] if g in times) for arm in "AB"}
    for arm in "AB":
        ratios[arm].append(vendor / best[arm][0])
    print(f"| {p} | {vendor:.1f} | {best['A'][0]:.1f} `{best['A'][1][:8]}` | {vendor / best['A'][0]:.3f} | "
          f"{best['B'][0]:.1f} `{best['B'][1][:8]}` | {vendor / best['B'][0]:.3f} | {best['A'][0] / best['B'][0]:.3f} |")
g = {arm: statistics.geometric_mean(r) for arm, r in ratios.items()}
wins = sum(b > a * 1.01 for a, b in zip(ratios["A"], ratios["B"]))
losses = sum(b < a / 1.01 for a, b in zip(ratios["A"], ratios["B"]))
print(f"\ngeomean vs best vendor: A {g['A']:.4f}, B {g['B']:.4f} (B/A {g['B'] / g['A']:.4f}); "
      f"B better by >1% at {wins} shapes, worse by >1% at {losses}")
