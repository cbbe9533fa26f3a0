"""Write a hall-of-fame-shaped folder of kernels for a fresh bench of the public suite: for each of its 28 shapes,
the kernels that any recorded device bench under docs/results/ timed fastest against that bench's best vendor
baseline (the `TOP` best distinct genomes by their best recorded ratio), plus the record's own kernel
(docs/results/h200-public.json). Genomes the family's space refuses today are left out and listed. Measures
nothing: the selection is biased upward by construction (best of many noisy draws), which is why its kernels are
then timed again, interleaved with the vendor, by `evogemm bench --per-shape selection`.

    python docs/results/h200-public-10/select_recorded.py [TOP] > docs/results/h200-public-10/selection.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs/results/recorded-best-public"))

from best_recorded import kernel_ratios  # noqa: E402
from genome import Genome, Problem  # noqa: E402
from templates import family_registry  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent


def ranked(shapes: set[str]) -> dict[str, dict[str, tuple[float, dict, str]]]:
    """shape -> genome id -> (best ratio any bench recorded, the genome's dict, that bench)."""
    out: dict[str, dict[str, tuple[float, dict, str]]] = {s: {} for s in shapes}
    for problem, ratio, genome, bench in kernel_ratios(shapes):
        if ratio > out[problem].get(genome["id"], (0.0,))[0]:
            out[problem][genome["id"]] = (ratio, genome, bench)
    return out


def main(top: int = 4) -> None:
    record = json.loads((RESULTS / "h200-public.json").read_text())
    record_kernel = {}
    for s in record["shapes"]:
        ok = [k for k in s["kernels"] if k["measurement"].get("status") == "ok"]
        record_kernel[s["problem"]] = min(ok, key=lambda k: k["measurement"]["device"]["median_us"])["genome"]["id"]
    fams = family_registry()
    table = ranked(set(record_kernel))
    hall = HERE / "selection" / "hall_of_fame"
    hall.mkdir(parents=True, exist_ok=True)
    print("| shape | kernel | family | best recorded ratio | bench |")
    print("|---|---|---|---|---|")
    refused, distinct = [], set()
    for shape, gid_rec in record_kernel.items():
        problem = Problem.parse(shape)
        rows = sorted(table[shape].items(), key=lambda kv: -kv[1][0])
        chosen = []
        for gid, (ratio, gd, bench) in rows:
            if len(chosen) >= top and gid != gid_rec:
                continue
            g = Genome.from_dict({k: gd[k] for k in ("family", "params", "patches") if k in gd})
            space = fams.resolve(g.family).space
            if not space.is_valid(g, problem):
                refused.append(f"{shape} {gid[:8]} ({g.family}): {'; '.join(map(str, space.violations(g, problem)))}")
                continue
            chosen.append(g)
            distinct.add(g.id)
            print(f"| {shape} | {g.id[:8]} | {g.family} | {ratio:.3f} | {bench} |")
        (hall / f"{shape}.json").write_text(json.dumps([g.to_dict() for g in chosen], indent=1) + "\n")
    print(f"\n{distinct.__len__()} distinct kernels over {len(record_kernel)} shapes.")
    if refused:
        print("\nRefused by today's spaces:\n")
        print("\n".join(f"- {r}" for r in refused))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
