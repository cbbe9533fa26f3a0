"""Each campaign's best kernel per shape in the one bench of both (bench.json: every shape timed
the union of this session.s campaign halls (h200-public-4) and the previous campaign's, interleaved with the
six vendor baselines): speedup against the best vendor, and the geomean of each.

    python docs/results/h200-public-4/arms.py
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
        "new": halls([here / f"campaign-{h}" for h in "AB"])}
ratios = {a: [] for a in arms}
print("| shape | best vendor (us) | previous campaign (us) | vs vendor | new campaign (us) | vs vendor | new / previous |")
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
          f"{best['new'][0]:.1f} `{best['new'][1][:8]}` | {vendor / best['new'][0]:.3f} | "
          f"{best['previous'][0] / best['new'][0]:.3f} |")
g = {a: statistics.geometric_mean(r) for a, r in ratios.items()}
better = sum(n > o * 1.01 for o, n in zip(ratios["previous"], ratios["new"]))
worse = sum(n < o / 1.01 for o, n in zip(ratios["previous"], ratios["new"]))
print(f"\ngeomean vs best vendor over {len(ratios['new'])} shapes: previous {g['previous']:.4f}, new {g['new']:.4f}; "
      f"new better by >1% at {better} shapes, worse by >1% at {worse}")
