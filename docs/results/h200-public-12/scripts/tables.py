"""Session 54's two H200 benches of the public suite (call1/pub, call2/pub: the same command twice on one machine)
beside the record of session 21 (../h200-public-2026-11-30-s21.json) and the median of session 49's three benches
(../h200-public-11): per shape the ratio of the best vendor baseline to the best kernel, the focused run's paired
median with its 95% interval, and the A/A median's 95% interval (the issue's A/A figure at shapes over 1 ms).
Reads JSON, measures nothing. usage: python scripts/tables.py > tables.md   (from docs/results/h200-public-12)"""
import json
import math
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CALLS = ("call1/pub", "call2/pub")
S49 = ("call1/pub", "call2/pub2", "call3/pub3")


def shapes(path: Path) -> dict:
    return {s["problem"]: s for s in json.loads(path.read_text())["shapes"]}


def ratio(s: dict) -> float:
    return s["speedups"]["best_vendor"]


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main() -> None:
    record = shapes(HERE.parent / "h200-public-2026-11-30-s21.json")
    s49 = [shapes(HERE.parent / "h200-public-11" / c / "bench.json") for c in S49]
    calls = [shapes(HERE / c / "bench.json") for c in CALLS]
    print("| shape | record (s21) | s49, median of 3 | call 1 | call 2 | paired [95%], call 1 / call 2 | "
          "A/A 95% interval, call 1 / call 2 | best vendor (us), call 1 |")
    print("|---|---|---|---|---|---|---|---|")
    cols = {"record": [], "s49": [], "c1": [], "c2": [], "p1": [], "p2": []}
    over_1ms = []
    for shape in calls[0]:
        r, m49 = ratio(record[shape]), statistics.median(ratio(b[shape]) for b in s49)
        c = [ratio(b[shape]) for b in calls]
        foc = [b[shape]["focused"] for b in calls]
        paired = " / ".join(f"{f['paired']['median']:.3f} [{f['paired']['ci_low']:.3f}-{f['paired']['ci_high']:.3f}]"
                            for f in foc)
        aa = [100 * (f["aa"]["ci_high"] - f["aa"]["ci_low"]) for f in foc]
        vendor_us = min(v["median_us"] for v in calls[0][shape]["baselines"]["device"].values())
        if vendor_us > 1000:
            over_1ms.append((shape, aa))
        for k, v in zip(cols, (r, m49, c[0], c[1], foc[0]["paired"]["median"], foc[1]["paired"]["median"])):
            cols[k].append(v)
        print(f"| {shape} | {r:.3f} | {m49:.3f} | {c[0]:.3f} | {c[1]:.3f} | {paired} | "
              f"{aa[0]:.1f}% / {aa[1]:.1f}% | {vendor_us:.1f} |")
    print(f"| geomean | {geomean(cols['record']):.3f} | {geomean(cols['s49']):.3f} | {geomean(cols['c1']):.3f} | "
          f"{geomean(cols['c2']):.3f} | {geomean(cols['p1']):.3f} / {geomean(cols['p2']):.3f} | | |")
    print(f"| worst | {min(cols['record']):.3f} | {min(cols['s49']):.3f} | {min(cols['c1']):.3f} | "
          f"{min(cols['c2']):.3f} | {min(cols['p1']):.3f} / {min(cols['p2']):.3f} | | |")
    print()
    print("Shapes whose best vendor call takes over 1 ms, A/A median's 95% interval (call 1 / call 2): " +
          "; ".join(f"{s} {a[0]:.1f}% / {a[1]:.1f}%" for s, a in over_1ms))


if __name__ == "__main__":
    main()
