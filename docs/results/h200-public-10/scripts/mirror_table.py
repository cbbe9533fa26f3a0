"""A public-suite bench per shape: the best vendor baseline against the best of the selection (the kernels no
column names: each shape's own recorded kernels), the best of each column's kernels (a folder of genome files or a
notes JSON whose keys are family-id8), and the best of the selection with the last column. Reads JSON, measures
nothing.

    python mirror_table.py h100-s48/pub/bench.json mirrors=public-mirrors > ../h100-s48/mirrors.md
    python mirror_table.py h100-s48/pub2/bench.json "mirrors v1=public-mirrors" \
        "mirrors v2=public-mirrors-v2-notes.json" > ../h100-s48/mirrors2.md
(paths relative to docs/results/h200-public-10)"""
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def ids(source: str) -> set[str]:
    path = HERE / source
    names = [p.stem for p in path.glob("*.json")] if path.is_dir() else list(json.loads(path.read_text()))
    return {name.split("-")[1] for name in names}


def main() -> None:
    bench = json.loads((HERE / sys.argv[1]).read_text())
    columns = [(label, ids(source)) for label, source in (arg.split("=") for arg in sys.argv[2:])]
    named = set().union(*(c for _, c in columns))
    print("| shape | best vendor (us) | selection | " + " | ".join(label for label, _ in columns)
          + f" | selection and {columns[-1][0]} |")
    print("|---|---|---|" + "---|" * (len(columns) + 1))
    cols: list[list[float]] = [[] for _ in range(len(columns) + 2)]
    for shape in bench["shapes"]:
        vendor = min(b["median_us"] for b in shape["baselines"]["device"].values() if b)
        times = {k["genome"]["id"][:8]: k["measurement"]["device"]["median_us"] for k in shape["kernels"]
                 if k["measurement"].get("status") == "ok"}
        sel = min(t for i, t in times.items() if i not in named)
        row = [vendor / sel] + [vendor / min(t for i, t in times.items() if i in c) for _, c in columns]
        row.append(max(row[0], row[-1]))
        for col, v in zip(cols, row):
            col.append(v)
        print(f"| {shape['problem']} | {vendor:.1f} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    print("| geomean | | " + " | ".join(f"{math.exp(sum(map(math.log, c)) / len(c)):.4f}" for c in cols) + " |")


if __name__ == "__main__":
    main()
