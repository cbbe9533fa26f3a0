"""The base sweep's table: per shape, the best vendor baseline against the two mirrors a campaign times first
(population.vendor_seeds: 2, each from the base its model prices fastest), the best of each family's such mirror,
the best of every base with the vendor's cluster, the best with the cluster dropped, and the two recorded
best kernels (refs); then which base won where. Reads the bench JSON and notes.json; measures nothing.
usage: sweep_table.py BENCH_JSON   (run from docs/results/mirror-bases)"""
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main() -> None:
    bench = json.loads(Path(sys.argv[1]).read_text())
    notes = json.loads((HERE / "notes.json").read_text())
    refs = json.loads((HERE.parent / "h100-vendor-algos" / "ref-notes.json").read_text())
    cols = ["campaign's two mirrors", "each family's mirror", "best base, vendor's cluster", "best base, no cluster", "best of the sweep",
            "two recorded best", "sweep and recorded"]
    print("| shape | best vendor (us) | " + " | ".join(cols) + " | rank of the campaign's better mirror in the sweep | winner |")
    print("|---|---|" + "---|" * (len(cols) + 2))
    agg = [[] for _ in cols]
    wins = []
    for shape in bench["shapes"]:
        p = shape["problem"]
        vendor = min(b["median_us"] for b in shape["baselines"]["device"].values() if b)
        times = {k["genome"]["id"][:8]: (k["measurement"]["device"]["median_us"], k["genome"]) for k in shape["kernels"]
                 if k["measurement"].get("status") == "ok"}
        mine = {n.split("-")[1]: [w for w in whys if w["shape"] == p] for n, whys in notes.items()}
        mine = {i: w for i, w in mine.items() if w and i in times}
        def best(ids):
            ids = [i for i in ids if i in times]
            return (vendor / min(times[i][0] for i in ids), min(ids, key=lambda i: times[i][0])) if ids else (None, None)
        camp = [i for i, w in mine.items() if any(x["campaign_seed"] for x in w)]
        fams = [i for i, w in mine.items() if any(x["family_pick"] and x["cluster"] for x in w)]
        kept = [i for i, w in mine.items() if any(x["cluster"] for x in w)]
        dropped = [i for i, w in mine.items() if any(not x["cluster"] for x in w)]
        ref_ids = [n.split("-")[1] for n, w in refs.items() if any(x.split(":")[0] == p for x in w)]
        row = [best(camp)[0], best(fams)[0], best(kept)[0], best(dropped)[0], best(list(mine))[0], best(ref_ids)[0],
               best(list(mine) + ref_ids)[0]]
        order = sorted(mine, key=lambda i: times[i][0])
        rank = min(order.index(i) for i in camp) + 1 if camp else None
        win = best(list(mine))[1]
        if win:
            g = times[win][1]
            w = mine[win][0]
            what = (f"{g['family']} {g['params'].get('schedule')} {g['params']['tile_m']}x{g['params']['tile_n']} "
                    f"c{g['params']['cluster_m']}x{g['params']['cluster_n']} {g['params'].get('epilogue')} "
                    f"base {w['base']}")
            wins.append((p, what))
        for a, v in zip(agg, row):
            a.append(v)
        print(f"| {p} | {vendor:.2f} | " + " | ".join("-" if v is None else f"{v:.3f}" for v in row) +
              f" | {rank} of {len(mine)} | {win} |")
    print("| geomean | | " + " | ".join(f"{geomean(a):.3f}" for a in agg) + " | | |")
    print()
    for p, what in wins:
        print(f"- {p}: {what}")


if __name__ == "__main__":
    main()
