"""Tables of this folder's benches: each shape's best vendor baseline, the best kernel a revision-3 space allows
(multicast slices of whole 8-row swizzle atoms, clusters of at most 4) and the best kernel only revision 4 allows.

python docs/results/h200-multicast-slices/slices.py  (from the repository root) > docs/results/h200-multicast-slices/slices.md
"""

import csv
import json
from collections import defaultdict
from pathlib import Path

from genome import Genome
from templates import get_space

HERE = Path(__file__).resolve().parent


def genomes(folder: Path) -> dict[str, Genome]:
    out = {}
    for path in sorted(folder.glob("*.json")):
        g = Genome.from_dict(json.loads(path.read_text()))
        out[get_space(g.family).validate(g).id] = (g, path.stem)
    return out


def label(g: Genome) -> str:
    p = g.param_dict
    kind = {"ws": "ws", "pingpong": "pp", "cooperative": "coop"}[p["schedule"]]
    extra = f" ks{p['ksplit']}" if "ksplit" in p else ""
    return f"{kind} {p['tile_m']}x{p['tile_n']} c{p['cluster_m']}x{p['cluster_n']}{extra}"


def table(bench_csv: Path, kernels: dict) -> list[str]:
    times = defaultdict(dict)
    for row in csv.DictReader(bench_csv.open()):
        if row["status"] == "ok":
            times[row["shape"]][row["candidate"].split("[")[-1].rstrip("]")] = (float(row["device_us"]), row["kind"])
    lines = ["| shape | best vendor (us) | best kernel of revision 3 | vs vendor | best kernel new in revision 4 | vs vendor "
             "| new / old |", "|---|---|---|---|---|---|---|"]
    for shape, cands in times.items():
        vendor = min(t for t, kind in cands.values() if kind == "baseline")
        best = {}
        for cid, (t, kind) in cands.items():
            if kind == "baseline":
                continue
            g = next(v[0] for k, v in kernels.items() if k.startswith(cid) or cid.startswith(k))
            new = not get_space(g.family).as_of(3).is_valid(g)
            if new not in best or t < best[new][0]:
                best[new] = (t, g)
        old, fresh = best.get(False), best.get(True)
        cell = lambda b: f"{label(b[1])} `{b[1].id[:8]}` {b[0]:.2f}" if b else "-"
        ratio = lambda b: f"{vendor / b[0]:.3f}" if b else "-"
        gain = f"{old[0] / fresh[0]:.3f}" if old and fresh else "-"
        lines.append(f"| {shape} | {vendor:.2f} | {cell(old)} | {ratio(old)} | {cell(fresh)} | {ratio(fresh)} | {gain} |")
    return lines


def main() -> None:
    parts = [("Call 1, small shapes (`call1/tiny/bench.csv`)", "call1/tiny/bench.csv", "kernels/call1-tiny"),
             ("Call 1, split-K (`call1/sk/bench.csv`)", "call1/sk/bench.csv", "kernels/call1-sk"),
             ("Call 2, small shapes (`call2/tiny2/bench.csv`)", "call2/tiny2/bench.csv", "kernels/call2")]
    out = []
    for title, bench, folder in parts:
        out += [f"## {title}", ""] + table(HERE / bench, genomes(HERE / folder)) + [""]
    print("\n".join(out))


if __name__ == "__main__":
    main()
