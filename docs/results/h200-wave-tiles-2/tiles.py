"""The best kernel per shape among the tiles with a tile N outside CuTe's base WGMMA widths (now built
with CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED: files new-*.json) and among the reference kernels
(the halls' best, files ref-*.json), from the one bench in bench.json.

    python docs/results/h200-wave-tiles-2/tiles.py
"""
import json, statistics
from pathlib import Path
here = Path(__file__).resolve().parent
bench = json.loads((here / "bench.json").read_text())
group = {json.loads(f.read_text())["id"]: f.stem.split("-")[0] for f in (here / "kernels").glob("*.json")}
def label(g):
    p = g["params"]
    return f"{g['family']} {p['tile_m']}x{p['tile_n']} {p['schedule']} {p['scheduler']} c{p['cluster_m']}x{p['cluster_n']}"
ratios = {"ref": [], "new": []}
print("| shape | best vendor (us) | best reference kernel | vs vendor | best extended-N tile | vs vendor | new / ref |")
print("|---|---|---|---|---|---|---|")
for s in bench["shapes"]:
    vendor = min(t["median_us"] for t in s["baselines"]["device"].values())
    best = {}
    for k in s["kernels"]:
        m = k["measurement"]
        if m["status"] != "ok" or not m.get("device"):
            continue
        arm = group[k["genome"]["id"]]
        t = m["device"]["median_us"]
        if arm not in best or t < best[arm][0]:
            best[arm] = (t, k["genome"])
    for arm in ratios:
        ratios[arm].append(vendor / best[arm][0])
    r, n = best["ref"], best["new"]
    print(f"| {s['problem']} | {vendor:.1f} | {label(r[1])} `{r[1]['id'][:8]}` | {vendor / r[0]:.3f} | "
          f"{label(n[1])} `{n[1]['id'][:8]}` | {vendor / n[0]:.3f} | {r[0] / n[0]:.3f} |")
g = {a: statistics.geometric_mean(r) for a, r in ratios.items()}
print(f"\ngeomean vs best vendor over {len(ratios['ref'])} shapes: reference kernels {g['ref']:.4f}, "
      f"extended-N tiles {g['new']:.4f}, the better of both {statistics.geometric_mean(map(max, ratios['ref'], ratios['new'])):.4f}")
