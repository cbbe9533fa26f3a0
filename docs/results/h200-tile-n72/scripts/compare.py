"""Tile N 72 against its 128x80 twin (same cluster, stages) and the best reference, per shape, from the bench of
call_72.sh. python compare.py ../bench/bench.json > ../compare.md"""
import glob
import json
import math
import sys
from pathlib import Path

KERNELS = Path(__file__).resolve().parent.parent / "kernels"


def ids(sub):
    return {f.name.split("_s7-")[0].split("_", 2)[-1]: json.load(open(f))["id"]
            for f in sorted((KERNELS / sub).glob("*.json"))}


def main(path):
    bench = json.load(open(path))
    t72, t80 = ids("tile72"), ids("twins80")
    refs = {json.load(open(f))["id"] for f in (KERNELS / "refs").glob("*.json")}
    print("| shape | best vendor (us) | best tile 72 (us, cluster) | best 128x80 twin (us, cluster) | best reference (us) | "
          "tile 72 vs best vendor | reference vs best vendor |")
    print("|---|---|---|---|---|---|---|")
    for s in bench["shapes"]:
        vendor = min(v["median_us"] for v in s["baselines"]["device"].values())
        us = {k["genome"]["id"]: k["measurement"]["device"]["median_us"] for k in s["kernels"]
              if k["measurement"]["status"] == "ok"}
        a = min((us[g], c) for c, g in t72.items() if g in us)
        b = min((us[g], c) for c, g in t80.items() if g in us)
        r = min(us[g] for g in refs if g in us)
        print(f"| {s['problem']} | {vendor:.2f} | {a[0]:.2f} ({a[1].split('_')[-1]}) | {b[0]:.2f} ({b[1].split('_')[-1]}) "
              f"| {r:.2f} | {vendor / a[0]:.3f} | {vendor / r:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1])
