"""Session 63: for each public shape, the kernels that H200 benches recorded as consistently fast there and that the
record's bench (../../h200-public.json) did not time at that shape. A kernel's score is the median, over the distinct
H200 bench runs that timed it at the shape (a run copied into two folders counts once: keyed by its date), of the
ratio of that run's best vendor time to its time; kernels with fewer than MIN_RUNS runs are left out, so one lucky
draw cannot pick a kernel (h200-public-10/select_recorded.py picked by the best ratio, biased upward by
construction). Per shape the TOP best by that median, of those whose median is within MARGIN of the record's own
ratio there (a kernel further behind is unlikely to lead a new run), enter
kernels/consistent/hall_of_fame/<shape>.json, for `bench --per-shape`. Measures nothing; prints what it picked, as a table. Run from the repository root:

    python docs/results/h200-public-13/scripts/select_consistent.py [TOP] [MIN_RUNS] [MARGIN] \
        > docs/results/h200-public-13/consistent.md
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs/results/recorded-best-public"))

from best_recorded import PROBE_ONLY, bench_files, ratios_in  # noqa: E402
from genome import Genome, Problem  # noqa: E402
from templates import family_registry  # noqa: E402

RESULTS = ROOT / "docs/results"
OUT = Path(__file__).resolve().parents[1] / "kernels" / "consistent"


def ratios_by_run(shapes: set[str]) -> "dict[str, dict[str, dict[str, float]]]":
    """shape -> genome id -> run key (the bench's date) -> ratio; the genome dicts in `GENOMES`."""
    out: dict[str, dict[str, dict[str, float]]] = {s: defaultdict(dict) for s in shapes}
    for _path, data in bench_files("H200"):
        run = str((data.get("meta") or {}).get("date"))
        for problem, ratio, g in ratios_in(data, shapes):
            if not any(g.get("params", {}).get(k) for k in PROBE_ONLY):
                GENOMES[g["id"]] = g
                out[problem][g["id"]][run] = ratio
    return out


GENOMES: dict[str, dict] = {}


def main(top: int = 3, min_runs: int = 3, margin: float = 0.015) -> None:
    record = json.loads((RESULTS / "h200-public.json").read_text())
    timed = {s["problem"]: {k["genome"]["id"] for k in s["kernels"]} for s in record["shapes"]}
    rec_ratio = {s["problem"]: s["speedups"]["best_vendor"] for s in record["shapes"]}
    table = ratios_by_run(set(timed))
    fams = family_registry()
    hall = OUT / "hall_of_fame"
    hall.mkdir(parents=True, exist_ok=True)
    print(f"Kernels with at least {min_runs} H200 runs at the shape, the record's bench not timing them there; "
          f"per shape the {top} best by median ratio, of those within {margin} of the record's ratio.\n")
    print("| shape | record | kernel | family | median ratio | runs | range |")
    print("|---|---|---|---|---|---|---|")
    distinct = set()
    for shape in timed:
        problem = Problem.parse(shape)
        rows = [(statistics.median(r.values()), gid, r) for gid, r in table[shape].items()
                if len(r) >= min_runs and gid not in timed[shape]
                and statistics.median(r.values()) >= rec_ratio[shape] - margin]
        chosen = []
        for med, gid, r in sorted(rows, key=lambda t: -t[0]):
            if len(chosen) >= top:
                break
            gd = GENOMES[gid]
            g = Genome.from_dict({k: gd[k] for k in ("family", "params", "patches") if k in gd})
            if not fams.resolve(g.family).space.is_valid(g, problem):
                continue
            chosen.append(g)
            distinct.add(g.id)
            print(f"| {shape} | {rec_ratio[shape]:.3f} | {g.id[:8]} | {g.family} | {med:.3f} | {len(r)} | "
                  f"{min(r.values()):.3f}-{max(r.values()):.3f} |")
        (hall / f"{shape}.json").write_text(json.dumps([g.to_dict() for g in chosen], indent=1) + "\n")
    print(f"\n{len(distinct)} distinct kernels over {len(timed)} shapes.")


if __name__ == "__main__":
    args = sys.argv[1:4]
    main(*(int(a) for a in args[:2]), *(float(a) for a in args[2:]))
