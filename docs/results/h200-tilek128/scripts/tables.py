"""Session 55's two H200 benches of the public suite (call1/pub, call2/pub: one command twice on one machine) beside
session 54's record (../h200-public-12/call1/pub, the record until this session) and its second bench: per shape
the ratio of the best vendor baseline to the best kernel, the focused run's paired median with its 95% interval,
the A/A median's 95% interval, and the tile_k 128 probes' best ratio beside their tile_k 64 originals'.
Reads JSON, measures nothing. usage: python scripts/tables.py > tables.md   (from docs/results/h200-tilek128)"""
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
S54 = (HERE.parent / "h200-public-12/call1/pub/bench.json", HERE.parent / "h200-public-12/call2/pub/bench.json")
CALLS = (HERE / "call1/pub/bench.json", HERE / "call2/pub/bench.json")


def shapes(path: Path) -> dict:
    return {s["problem"]: s for s in json.loads(path.read_text())["shapes"]}


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(map(math.log, xs)) / len(xs))


def probe_ids() -> set[str]:
    return {g["id"] for f in (HERE / "probe/hall_of_fame").glob("*.json") for g in json.loads(f.read_text())}


def best_ratio(s: dict, pick) -> "float | None":
    vendor = min(v["median_us"] for v in s["baselines"]["device"].values())
    times = [k["measurement"]["device"]["median_us"] for k in s["kernels"]
             if k["measurement"].get("device") and pick(k["genome"])]
    return vendor / min(times) if times else None


def main() -> None:
    s54, calls = [shapes(p) for p in S54], [shapes(p) for p in CALLS]
    print("| shape | s54 record | s54 bench 2 | call 1 | call 2 | paired [95%], call 1 / call 2 | "
          "A/A 95% interval, call 1 / call 2 | best vendor (us), call 1 |")
    print("|---|---|---|---|---|---|---|---|")
    cols: dict[str, list[float]] = {k: [] for k in ("r", "r2", "c1", "c2", "p1", "p2")}
    for shape in calls[0]:
        row = [b[shape]["speedups"]["best_vendor"] for b in (*s54, *calls)]
        foc = [b[shape]["focused"] for b in calls]
        paired = " / ".join(f"{f['paired']['median']:.3f} [{f['paired']['ci_low']:.3f}-{f['paired']['ci_high']:.3f}]"
                            for f in foc)
        aa = " / ".join(f"{100 * (f['aa']['ci_high'] - f['aa']['ci_low']):.1f}%" for f in foc)
        vendor_us = min(v["median_us"] for v in calls[0][shape]["baselines"]["device"].values())
        for k, v in zip(cols, (*row, foc[0]["paired"]["median"], foc[1]["paired"]["median"])):
            cols[k].append(v)
        print(f"| {shape} | " + " | ".join(f"{x:.3f}" for x in row) + f" | {paired} | {aa} | {vendor_us:.1f} |")
    for name, fn in (("geomean", geomean), ("worst", min)):
        print(f"| {name} | " + " | ".join(f"{fn(cols[k]):.3f}" for k in ("r", "r2", "c1", "c2"))
              + f" | {fn(cols['p1']):.3f} / {fn(cols['p2']):.3f} | | |")
    print()
    probes = probe_ids()
    print("tile_k 128 probes (../probe), best ratio to the best vendor baseline, call 1 / call 2, beside the best tile_k "
          "64 kernel of the same family at that shape:\n")
    print("| shape | best probe | best tile_k 64 of sm90_cutlass, sm90_swapab, sm90_lean |")
    print("|---|---|---|")
    for shape in sorted({s for c in calls for s in c if best_ratio(c[s], lambda g: g["id"] in probes)}):
        p = " / ".join(f"{best_ratio(c[shape], lambda g: g['id'] in probes):.3f}" for c in calls)
        o = " / ".join(f"{best_ratio(c[shape], lambda g: g['id'] not in probes and g['params'].get('tile_k') == 64 and g['family'] in ('sm90_cutlass', 'sm90_swapab', 'sm90_lean')):.3f}" for c in calls)
        print(f"| {shape} | {p} | {o} |")


if __name__ == "__main__":
    main()
