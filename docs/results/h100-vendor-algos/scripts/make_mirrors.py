"""The vendor-mirror genomes (evolution/vendor_seeds.py) of the H100 probe's candidates at the hard shapes:
heuristic ranks 0 and 1 and the fastest timed (ranked right after rank 0), four a shape, each genome once, its
reasons in notes.json. usage: make_mirrors.py vendor_algos.json OUT_DIR SHAPE,SHAPE,... [COUNT a shape, 4]"""
import json, sys
from pathlib import Path
from evolution.vendor_seeds import vendor_seeds
from evolution.seeding import load_handpicked
from templates import family_registry
from genome import Problem
R = family_registry()
fams = ["sm90_cutlass", "sm90_lean", "sm90_swapab", "sm90_splitk"]
spaces = [R.resolve(f).space for f in fams]
hp = load_handpicked(fams)
d = json.load(open(sys.argv[1]))
out = Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
shapes = sys.argv[3].split(",")
allg = {}
for shape in shapes:
    v = d["shapes"][shape]
    rows = [r for r in v["algos"] if "config" in r]
    fastest = min(rows, key=lambda r: r["us"])
    chosen = [r for r in rows if r["rank"] <= 1] + ([fastest] if fastest["rank"] > 1 else [])
    algos = {f"h100_rank{r['rank']}": r["config"] for r in chosen}
    us = {f"h100_rank{r['rank']}": float(r["rank"]) for r in chosen}   # heuristic order, not the timing
    if fastest["rank"] > 1:
        us[f"h100_rank{fastest['rank']}"] = 0.5                      # the fastest timed right after rank 0
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    seeds = vendor_seeds(Problem.parse(shape), spaces, algos, us, hp, count, set())
    for g, origin, note in seeds:
        allg.setdefault(g.id, (g, []))[1].append(f"{shape}: {note}")
    print(shape, [(g.id[:8], n.split("): ")[1]) for g, _, n in seeds])
notes = {}
for gid, (g, why) in allg.items():
    (out / f"{g.family}-{gid[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1) + "\n")
    notes[f"{g.family}-{gid[:8]}"] = why
(out.parent / "notes.json").write_text(json.dumps(notes, indent=1) + "\n")
print(len(allg), "genomes")
