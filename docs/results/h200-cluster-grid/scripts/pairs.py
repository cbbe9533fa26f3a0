"""The pairs of the cluster_grid bench: each occupancy kernel against its cutlass twin, at the shape it was picked for
(and at every shape), with the rounds each grid takes, the best vendor baseline and the best recorded kernel (refs)
of the same bench. python pairs.py ../bench/bench.json > ../pairs.md"""
import glob
import json
import math
import sys
from pathlib import Path

from genome import Genome, Problem
from templates import get_space

HERE = Path(__file__).resolve().parent
KERNELS = HERE.parent / "kernels"
SPACE = get_space("sm90_cutlass")
ROUNDS = {4: (29, 30), 8: (14, 15)}


def rounds(problem, g):
    p = SPACE.params_of(g)
    cm, cn = p["cluster_m"], p["cluster_n"]
    from evaluator.sim_sm90 import log_swizzle
    tm, tn = math.ceil(problem.m / p["tile_m"]), math.ceil(problem.n / p["tile_n"])
    s = 1 << log_swizzle(tm, tn, p["swizzle"])
    clusters = math.ceil(tm / (s * cm)) * s * math.ceil(tn / (s * cn)) * s
    return tuple(math.ceil(clusters / c) for c in ROUNDS[cm * cn])


def main(path):
    bench = json.load(open(path))
    times, vendor = {}, {}
    for s in bench["shapes"]:
        vendor[s["problem"]] = min(v["median_us"] for v in s["baselines"]["device"].values())
        for k in s["kernels"]:
            m = k["measurement"]
            if m["status"] == "ok":
                times[s["problem"], k["genome"]["id"]] = m["device"]["median_us"]
    print("| shape | kernel | rounds: CUTLASS's count / the device's | cutlass (us) | occupancy (us) | "
          "cutlass / occupancy | occupancy vs best vendor | best recorded kernel (refs) vs best vendor |")
    print("|---|---|---|---|---|---|---|---|")
    refs = {f.name.split("-")[0]: Genome.from_dict(json.load(open(f))).id for f in sorted((KERNELS / "refs").glob("*.json"))}
    ratios, control = [], []
    for f in sorted((KERNELS / "occupancy").glob("*.json")):
        shape = f.name.split("-")[0]
        problem = Problem.parse(shape)
        occ = Genome.from_dict(json.load(open(f)))
        twin = SPACE.validate(occ.with_params(cluster_grid="cutlass"))
        a, b = times.get((shape, twin.id)), times.get((shape, occ.id))
        if a is None or b is None:
            continue
        p = SPACE.params_of(occ)
        name = (f"{p['schedule']} {p['tile_m']}x{p['tile_n']} c{p['cluster_m']}x{p['cluster_n']}"
                + (" (recorded)" if "-recorded-" in f.name else ""))
        ra, rb = rounds(problem, occ)
        ref = times.get((shape, refs.get(shape)))
        print(f"| {shape} | {name} (`{occ.id[:8]}`) | {ra} / {rb} | {a:.2f} | {b:.2f} | {a / b:.3f} | "
              f"{vendor[shape] / b:.3f} | {vendor[shape] / ref:.3f} |" if ref else "")
        (ratios if ra > rb else control).append(a / b)
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
    print(f"\n- pairs whose rounds differ: {len(ratios)}, cutlass / occupancy geomean {gm(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}")
    print(f"- pairs whose rounds are the same: {len(control)}, geomean {gm(control):.3f}, "
          f"range {min(control):.3f}-{max(control):.3f}")
    best = {}
    for (shape, gid), us in times.items():
        best[shape] = min(best.get(shape, math.inf), us)
    print("\n| shape | best vendor (us) | best kernel of this bench (us) | vs best vendor |")
    print("|---|---|---|---|")
    for shape in vendor:
        print(f"| {shape} | {vendor[shape]:.2f} | {best[shape]:.2f} | {vendor[shape] / best[shape]:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1])
