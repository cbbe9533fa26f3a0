"""The recorded evidence behind population.wave_cooperative (session 39): every gated device measurement under
docs/results grouped by shape (the median over the benches that timed a genome, as speedup over the best vendor
baseline of the same run; genomes with gemm_pdl, a patch not kept, left out). For each shape with 20 or more
genomes: the best recorded, the three cooperative sm90_cutlass one-wave tiles (M 128 or 256) that fill the most
SMs and the best measured kernel of each (any cluster), and sm90_lean's two one-wave 128 x N tiles; then the
cluster variants of the cooperative one-wave tiles at fifteen shapes. python evidence.py > evidence.md"""
import collections
import glob
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TILE_N = (16, 32, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)
timed = collections.defaultdict(dict)
for f in glob.glob(str(ROOT / "**" / "*.json"), recursive=True):
    try:
        data = json.load(open(f))
    except (OSError, ValueError):
        continue
    if not isinstance(data, dict) or not isinstance(data.get("shapes"), list):
        continue
    for shape in data["shapes"]:
        if not isinstance(shape, dict):
            continue
        vendor = [v["median_us"] for v in shape.get("baselines", {}).get("device", {}).values()
                  if isinstance(v, dict) and v.get("median_us")]
        for k in shape.get("kernels", []) if vendor else ():
            us = ((k.get("measurement") or {}).get("device") or {}).get("median_us")
            if us and not k["genome"]["params"].get("gemm_pdl"):
                timed[shape["problem"]].setdefault(k["genome"]["id"], []).append((min(vendor) / us, k["genome"]))


def key(g):
    p = g["params"]
    return g["family"], p.get("schedule"), p.get("tile_m"), p.get("tile_n")


def median(v):
    return sorted(x[0] for x in v)[len(v) // 2]


print("| shape | genomes | best recorded | cooperative one-wave tiles (CTAs): best | sm90_lean 128 x N (CTAs): best |")
print("|---|---|---|---|---|")
for prob, ks in sorted(timed.items(), key=lambda x: -len(x[1])):
    m, n, k = map(int, prob.split("x"))
    if len(ks) < 20 or k % 8:
        continue
    best = collections.defaultdict(float)
    for v in ks.values():
        best[key(v[0][1])] = max(best[key(v[0][1])], median(v))
    coop = sorted(((math.ceil(m / tm) * math.ceil(n / tn), tm, tn) for tm in (128, 256) for tn in TILE_N
                   if 32 <= tm * tn // 256 <= 192 and math.ceil(m / tm) * math.ceil(n / tn) <= 132), reverse=True)[:3]
    lean = sorted(((math.ceil(m / 128) * math.ceil(n / tn), tn) for tn in TILE_N
                   if tn <= 192 and math.ceil(m / 128) * math.ceil(n / tn) <= 132), reverse=True)[:2]
    fmt = lambda r: "%.3f" % r if r else "-"   # noqa: E731
    cells = [f"{tm}x{tn} ({c}): {fmt(best.get(('sm90_cutlass', 'cooperative', tm, tn)))}" for c, tm, tn in coop]
    lcells = [f"128x{tn} ({c}): {fmt(best.get(('sm90_lean', 'ws', 128, tn)))}" for c, tn in lean]
    print(f"| {prob} | {len(ks)} | {max(median(v) for v in ks.values()):.3f} | {'; '.join(cells)} | {'; '.join(lcells)} |")

print("\n| shape | cooperative one-wave tiles by cluster (and stages, epilogue subtile): best |")
print("|---|---|")
for prob in ["128x28672x4096", "256x12288x4096", "512x8192x28672", "1024x4096x12288", "2000x2000x2000",
             "2048x2048x2048", "640x3584x2048", "1536x1536x6144", "768x2048x8192", "384x3072x8192", "5632x1024x4096",
             "1408x2816x1408", "3072x1280x1024", "4096x1024x1024", "5000x1000x3000"]:
    m, n, k = map(int, prob.split("x"))
    variants = collections.defaultdict(float)
    for v in timed[prob].values():
        g = v[0][1]
        p = g["params"]
        if g["family"] == "sm90_cutlass" and p.get("schedule") == "cooperative" and \
                math.ceil(m / p["tile_m"]) * math.ceil(n / p["tile_n"]) <= 132:
            name = (f"{p['tile_m']}x{p['tile_n']} c{p['cluster_m']}x{p['cluster_n']} s{p['stages']}"
                    + ("" if p.get("epilogue_tile", "auto") == "auto" else f" e{p['epilogue_tile']}"))
            variants[name] = max(variants[name], median(v))
    top = sorted(variants.items(), key=lambda x: -x[1])[:8]
    print(f"| {prob} | {'; '.join(f'{name}: {r:.3f}' for name, r in top)} |")
