"""What space revision 4 added to this campaign: per shape, the best paired ratio the campaign measured of a genome that
a revision-3 space allows, and of one only revision 4 allows (B multicast slices that are not whole 8-row swizzle atoms,
clusters of 8), with how many of the latter it timed.

python docs/results/h200-unseen-7/revision4.py  (from the repository root) > docs/results/h200-unseen-7/revision4.md
"""

import json
import sqlite3
from pathlib import Path

from genome import Genome
from templates import get_space

DB = Path(__file__).resolve().parent / "campaign" / "campaign.db"


def describe(g: Genome) -> str:
    p = g.param_dict
    kind = {"ws": "ws", "pingpong": "pp", "cooperative": "coop"}.get(p.get("schedule"), g.family)
    return f"{g.family} {kind} {p.get('tile_m')}x{p.get('tile_n')} c{p.get('cluster_m')}x{p.get('cluster_n')}"


def main() -> None:
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    genomes = {gid: Genome.from_json(text) for gid, text in con.execute("select id, json from genomes")}
    best: dict = {}
    new_runs: dict = {}
    for gid, problem, paired in con.execute("select genome_id, problem, paired from evaluations where status = 'ok'"):
        g = genomes[gid]
        new = not get_space(g.family).as_of(3).is_valid(g)
        new_runs[problem] = new_runs.get(problem, 0) + new
        ratio = (json.loads(paired) if paired else {}).get("median")
        if ratio is not None and ratio > best.get((problem, new), (0.0,))[0]:
            best[(problem, new)] = (ratio, g)
    print("| shape | best of a revision-3 space (paired vs best vendor) | best only revision 4 allows | "
          "runs of the latter |")
    print("|---|---|---|---|")
    for problem in dict.fromkeys(p for p, _ in best):
        cell = lambda b: f"{describe(b[1])} `{b[1].id[:8]}` {b[0]:.3f}" if b else "-"
        print(f"| {problem} | {cell(best.get((problem, False)))} | {cell(best.get((problem, True)))} | "
              f"{new_runs.get(problem, 0)} |")


if __name__ == "__main__":
    main()
