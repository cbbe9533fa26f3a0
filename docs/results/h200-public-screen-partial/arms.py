"""Each campaign's best kernel per shape in the one bench of both (bench.json: every shape timed
the union of the screen campaign's hall of fame and the previous campaign's, interleaved with the
six vendor baselines): speedup against the best vendor, and the geomean of each.

    python docs/results/h200-public-screen-partial/arms.py
"""
import json, statistics
from pathlib import Path
here = Path(__file__).resolve().parent
bench = json.loads((here / "bench.json").read_text())
def halls(folders):
    out = {}
    for folder in folders:
        for f in sorted((folder / "hall_of_fame").glob("*.json")):
            out.setdefault(f.stem, set()).update(e["genome"]["id"] for e in json.loads(f.read_text()))
    return out
arms = {"previous": halls([here.parent / "h200-public-3" / f"campaign-{h}" for h in "AB"]),
        "screen": halls([here / f"campaign-{h}" for h in "AB"])}
ratios = {a: [] for a in arms}
print("| shape | best vendor (us) | previous campaign (us) | vs vendor | screen campaign (us) | vs vendor | screen / previous |")
print("|---|---|---|---|---|---|---|")
for s in bench["shapes"]:
    p = s["problem"]
    vendor = min(t["median_us"] for t in s["baselines"]["device"].values())
    times = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"]
             if k["measurement"]["status"] == "ok" and k["measurement"].get("device")}
    best = {a: min((times[g], g) for g in arms[a].get(p, ()) if g in times) for a in arms}
    for a in arms:
        ratios[a].append(vendor / best[a][0])
    print(f"| {p} | {vendor:.1f} | {best['previous'][0]:.1f} `{best['previous'][1][:8]}` | {vendor / best['previous'][0]:.3f} | "
          f"{best['screen'][0]:.1f} `{best['screen'][1][:8]}` | {vendor / best['screen'][0]:.3f} | "
          f"{best['previous'][0] / best['screen'][0]:.3f} |")
g = {a: statistics.geometric_mean(r) for a, r in ratios.items()}
better = sum(n > o * 1.01 for o, n in zip(ratios["previous"], ratios["screen"]))
worse = sum(n < o / 1.01 for o, n in zip(ratios["previous"], ratios["screen"]))
print(f"\ngeomean vs best vendor over {len(ratios['screen'])} shapes: previous {g['previous']:.4f}, screen {g['screen']:.4f}; "
      f"screen better by >1% at {better} shapes, worse by >1% at {worse}")
