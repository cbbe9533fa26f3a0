"""Two probe benches of the same kernels on different runs (e.g. session 56's template, 16-row Y boxes, and session
57's, 8-row boxes where Y has at most 8 rows): per shape and family (y_resident apart), the geometric mean over the
kernels both timed of (vendor / kernel in the second run) / (vendor / kernel in the first), each run's own best
vendor baseline as the yardstick. Families the change does not touch, and the S = 16 shapes, show the noise between
the runs. Usage: python compare_runs.py FIRST_BENCH_JSON SECOND_BENCH_JSON"""
import json
import math
import sys
from collections import defaultdict


def speedups(path):
    out = {}
    for s in json.load(open(path))["shapes"]:
        base = s["baselines"]["device"]
        vendor = min(v["median_us"] for v in base.values() if isinstance(v, dict) and v.get("median_us"))
        for k in s["kernels"]:
            t = (k["measurement"].get("device") or {}).get("median_us")
            if t:
                g = k["genome"]
                out[(s["problem"], g["id"])] = (vendor / t, g["family"] + (" y_resident" if g["params"].get("y_resident") else ""))
    return out


first, second = speedups(sys.argv[1]), speedups(sys.argv[2])
ratios = defaultdict(list)
for key, (v0, fam) in first.items():
    if key in second:
        ratios[(key[0], fam)].append(second[key][0] / v0)
print("| shape | S | family | kernels | second / first: geomean (min-max) |")
print("|---|---|---|---|---|")
for (shape, fam), r in sorted(ratios.items(), key=lambda kv: (min(map(int, kv[0][0].split("x")[:2])), kv[0])):
    g = math.exp(sum(map(math.log, r)) / len(r))
    print(f"| {shape} | {min(map(int, shape.split('x')[:2]))} | {fam} | {len(r)} | {g:.3f} ({min(r):.3f}-{max(r):.3f}) |")
