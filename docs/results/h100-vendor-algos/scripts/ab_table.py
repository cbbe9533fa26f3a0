"""An A/B table of a bench: per shape, the best vendor baseline against the best of each column's kernels, those a
notes file names for the shape, and the better of the last two columns. Reads JSON, measures nothing.

    python ab_table.py h100-s48/ab/bench.json "its two mirrors=campaign-mirror-notes.json" \
        "its two recorded best=ref-notes.json" > ../ab.md
(paths relative to docs/results/h100-vendor-algos)"""
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def owners(notes_file: str) -> dict[str, set[str]]:
    """shape -> the 8-hex ids of the genomes the notes file names for it."""
    out: dict[str, set[str]] = {}
    for name, lines in json.loads((HERE / notes_file).read_text()).items():
        for line in lines:
            out.setdefault(line.split(":")[0], set()).add(name.split("-")[1])
    return out


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values))


def main() -> None:
    bench = json.loads((HERE / sys.argv[1]).read_text())
    columns = [(label, owners(notes)) for label, notes in (arg.split("=") for arg in sys.argv[2:])]
    labels = " | ".join(label for label, _ in columns)
    print(f"| shape | best vendor (us) | {labels} | the better of the last two |")
    print("|---|---|" + "---|" * (len(columns) + 1))
    cols: list[list[float]] = [[] for _ in range(len(columns) + 1)]
    for shape in bench["shapes"]:
        vendor = min(b["median_us"] for b in shape["baselines"]["device"].values() if b)
        times = {k["genome"]["id"][:8]: k["measurement"]["device"]["median_us"] for k in shape["kernels"]
                 if k["measurement"].get("status") == "ok"}
        p = shape["problem"]
        row = [vendor / min(times[i] for i in ids[p]) for _, ids in columns]
        row.append(max(row[-2:]))
        for col, v in zip(cols, row):
            col.append(v)
        print(f"| {p} | {vendor:.2f} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    print("| geomean | | " + " | ".join(f"{geomean(c):.3f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
