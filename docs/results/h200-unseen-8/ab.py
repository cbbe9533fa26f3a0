"""A/B of population.wave_seeds (session 38, device call 1): arm A (as shipped then, wave_seeds 0) and arm B
(wave_seeds 2) at four unseen shapes. Each campaign re-measured its hall of fame at the end of each shape,
interleaved with the six vendor baselines (its `verified` table); the table gives each arm's best kernel of that
run against the best vendor baseline of the same run, then the arms' ratio. python ab.py"""
import json
import math
import sqlite3
from pathlib import Path

HERE = Path(__file__).parent


def verified(folder):
    conn = sqlite3.connect(f"file:{folder / 'campaign.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT problem, json FROM verified").fetchall()
        genomes = {gid: json.loads(js) for gid, js in conn.execute("SELECT id, json FROM genomes")}
    finally:
        conn.close()
    out = {}
    for shape, js in rows:
        data = json.loads(js)
        vendor = min(b["median_us"] for b in data["baselines"]["device"].values() if b)
        kernels = [(m["device"]["median_us"], m["genome_id"]) for m in data["measurements"]
                   if m.get("status") == "ok" and (m.get("device") or {}).get("median_us")]
        t, gid = min(kernels)
        out[shape] = (vendor, t, genomes.get(gid, {}))
    return out


def describe(genome):
    p = genome.get("params", {})
    return (f"{genome.get('family')} {p.get('tile_m')}x{p.get('tile_n')} c{p.get('cluster_m')}x{p.get('cluster_n')} "
            f"{p.get('schedule')}")


a, b = verified(HERE / "campaigns" / "camp-a1"), verified(HERE / "campaigns" / "camp-b1")
logs = [0.0, 0.0]
print("| shape | arm A: best kernel / best vendor (us) | x vendor | arm A's best | arm B: best kernel / best vendor (us) "
      "| x vendor | arm B's best | B / A |")
print("|---|---|---|---|---|---|---|---|")
for shape in a:
    (va, ta, ga), (vb, tb, gb) = a[shape], b[shape]
    ra, rb = va / ta, vb / tb
    logs[0] += math.log(ra)
    logs[1] += math.log(rb)
    print(f"| {shape} | {ta:.2f} / {va:.2f} | {ra:.3f} | {describe(ga)} | {tb:.2f} / {vb:.2f} | {rb:.3f} | "
          f"{describe(gb)} | {rb / ra:.3f} |")
n = len(a)
print(f"| geomean ({n} shapes) | | {math.exp(logs[0] / n):.3f} | | | {math.exp(logs[1] / n):.3f} | | "
      f"{math.exp((logs[1] - logs[0]) / n):.3f} |")
