"""Two sets of halls of fame compared inside one bench: for each shape of a `bench.json` that timed
the union of both (`evogemm bench --per-shape --kernels A... B...`), each set's fastest kernel,
its speedup against the best vendor baseline of that same run, and the geomean of each set over
the shapes where both have a timed kernel (a shape one set has none for, say a campaign that ran out
of wall time before it, is shown with a dash and named under the table).

    python -m experiments.compare_halls BENCH.json before=DIR[,DIR...] after=DIR[,DIR...]

A DIR is a campaign folder (its `hall_of_fame/*.json`). Prints a Markdown table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .bench_report import geomean, load_results


def hall_ids(folders: "list[Path]") -> dict[str, set[str]]:
    """Genome ids per shape over the halls of fame of the folders."""
    out: dict[str, set[str]] = {}
    for folder in folders:
        for f in sorted((Path(folder) / "hall_of_fame").glob("*.json")):
            out.setdefault(f.stem, set()).update(e["genome"]["id"] for e in json.loads(f.read_text()))
    return out


def compare(bench_path: Path, arms: "dict[str, list[Path]]") -> str:
    """The Markdown comparison of exactly two arms (name -> campaign folders), first against second."""
    if len(arms) != 2:
        raise ValueError(f"compare takes two arms, got {len(arms)}")
    (a, b) = arms
    halls = {name: hall_ids(folders) for name, folders in arms.items()}
    results, _ = load_results(bench_path)
    ratios: dict[str, list[float]] = {a: [], b: []}
    missing: dict[str, list[str]] = {a: [], b: []}
    lines = [f"| shape | best vendor (us) | {a} (us) | {a} vs vendor | {b} (us) | {b} vs vendor | {b} / {a} |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        shape, vendor = r.problem.name, r.baselines.best_vendor_us
        times = {g.id: m.device.median_us for g, m in r.measurements if m.ok and m.device}
        best = {}
        for name in (a, b):
            timed = [(times[g], g) for g in halls[name].get(shape, ()) if g in times]
            if timed:
                best[name] = min(timed)
            else:
                missing[name].append(shape)
        cells = [f"{best[n][0]:.1f} `{best[n][1][:8]}` | {vendor / best[n][0]:.3f}" if n in best else "- | -"
                 for n in (a, b)]
        both = len(best) == 2
        lines.append(f"| {shape} | {vendor:.1f} | {cells[0]} | {cells[1]} | "
                     + (f"{best[a][0] / best[b][0]:.3f} |" if both else "- |"))
        if both:
            for name in (a, b):
                ratios[name].append(vendor / best[name][0])
    if not ratios[a]:
        raise ValueError(f"no shape of {bench_path} has a timed kernel of both the {a!r} and the {b!r} halls")
    g = {name: geomean(values) for name, values in ratios.items()}
    better = sum(y > x * 1.01 for x, y in zip(ratios[a], ratios[b]))
    worse = sum(y < x / 1.01 for x, y in zip(ratios[a], ratios[b]))
    lines += ["", f"geomean vs best vendor over the {len(ratios[a])} shapes both have: {a} {g[a]:.4f}, {b} {g[b]:.4f} "
                  f"({b} / {a} {g[b] / g[a]:.4f}); {b} better by >1% at {better} shapes, worse by >1% at {worse}"]
    lines += [f"no kernel of the {name!r} halls timed at: {', '.join(shapes)}" for name, shapes in missing.items() if shapes]
    return "\n".join(lines)


def main(argv: "list[str] | None" = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or not all("=" in x for x in args[1:]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    arms = {}
    for spec in args[1:]:
        name, folders = spec.split("=", 1)
        arms[name] = [Path(f) for f in folders.split(",")]
    print(compare(Path(args[0]), arms))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
