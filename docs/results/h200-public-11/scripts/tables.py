"""Session 49's three H200 benches of the public suite (the same command three times: call1/pub, call2/pub2,
call3/pub3) against the record of session 21 (../h200-public-2026-11-30-s21.json, h200-public.json until session 54): per shape the ratio of the best vendor baseline to the best
kernel in each call, their median, the paired median of each call's focused run, the A/A range where the best
vendor takes over 1 ms, and which kernel set the call's best kernel came from. Reads JSON, measures nothing.
usage: python scripts/tables.py > tables.md   (from docs/results/h200-public-11)"""
import json
import math
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CALLS = ["call1/pub", "call2/pub2", "call3/pub3"]
SETS = {"selection": "h200-public-10/selection", "mirrors v1": "h200-public-10/public-mirrors",
        "mirrors v2": "h200-public-10/public-mirrors-v2-new"}


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


def vendor_us(shape):
    return min(b["median_us"] for b in shape["baselines"]["device"].values() if b)


def best(shape):
    ok = [k for k in shape["kernels"] if k["measurement"].get("status") == "ok"]
    return min(ok, key=lambda k: k["measurement"]["device"]["median_us"])


def kernel_set(genome_id: str) -> str:
    """Which of the bench's kernel folders holds the genome (the selection is per shape: any of its files)."""
    for label, folder in SETS.items():
        for f in (HERE.parent / folder).rglob("*.json"):
            if genome_id[:8] in f.name or genome_id in f.read_text():
                return label
    return "?"


def main() -> None:
    record = {s["problem"]: s for s in json.loads((HERE.parent / "h200-public-2026-11-30-s21.json").read_text())["shapes"]}
    calls = [{s["problem"]: s for s in json.loads((HERE / c / "bench.json").read_text())["shapes"]} for c in CALLS]
    print("| shape | record (s21) | call 1 | call 2 | call 3 | median of 3 | paired, 3 calls | A/A range over 1 ms | "
          "best kernel's set, 3 calls |")
    print("|---|---|---|---|---|---|---|---|---|")
    cols = {k: [] for k in ("record", "c1", "c2", "c3", "median")}
    paired = [[], [], []]
    for p in record:
        rec = vendor_us(record[p]) / best(record[p])["measurement"]["device"]["median_us"]
        ratios = [vendor_us(c[p]) / best(c[p])["measurement"]["device"]["median_us"] for c in calls]
        pair = [c[p]["focused"]["paired"]["median"] for c in calls]
        aa = [c[p]["focused"]["aa"] for c in calls]
        over = vendor_us(calls[0][p]) > 1000
        aa_text = " / ".join(f"{(a['high'] - a['low']) * 100:.1f}%" for a in aa) if over else ""
        sets = " / ".join(kernel_set(best(c[p])["genome"]["id"]) for c in calls)
        med = statistics.median(ratios)
        for key, v in zip(cols, [rec, *ratios, med]):
            cols[key].append(v)
        for col, v in zip(paired, pair):
            col.append(v)
        print(f"| {p} | {rec:.3f} | " + " | ".join(f"{r:.3f}" for r in ratios) + f" | {med:.3f} | " +
              " / ".join(f"{v:.3f}" for v in pair) + f" | {aa_text} | {sets} |")
    print("| geomean | " + " | ".join(f"{geomean(v):.3f}" for v in cols.values()) + " | " +
          " / ".join(f"{geomean(v):.3f}" for v in paired) + " | | |")
    print("| worst | " + " | ".join(f"{min(v):.3f}" for v in cols.values()) + " | | | |")


if __name__ == "__main__":
    main()
