"""The vendor-mirror genomes (evolution/vendor_seeds.py) of the H100 probe's candidates at the given shapes:
heuristic ranks 0 and 1 and the fastest timed (ranked right after rank 0), COUNT a shape (4), each genome once, its
reasons in notes.json beside OUT_DIR. With DEVICE, each mirror's other parameters come from the hand-picked base
that device's simulator model prices fastest (as a campaign's do), else from the nearest base in tile.
usage: make_mirrors.py vendor_algos.json OUT_DIR SHAPE,SHAPE,... [COUNT [DEVICE]]
Committed: ../mirrors (COUNT 4 at suite-mirrors.yaml's shapes; ../mirror-notes.json);
../../h200-public-10/public-mirrors (COUNT 2 at the 25 public shapes the probe covered, made before a mirror could
fall back on a further base when the nearest fails: today's code adds two, 9d3ec445 and 86772c0f) and its model's-
base version (COUNT 2, DEVICE h200: public-mirrors-v2-notes.json, the 8 not in the first in public-mirrors-v2-new)."""
import json
import sys
from pathlib import Path

from genome_files import pick, spaces_and_bases, write_genomes

from evolution.seeding import model_order
from evolution.vendor_seeds import vendor_seeds
from genome import Problem

spaces, bases = spaces_and_bases()
probe = json.load(open(sys.argv[1]))
out = Path(sys.argv[2])
count = int(sys.argv[4]) if len(sys.argv) > 4 else 4
device = sys.argv[5] if len(sys.argv) > 5 else None
picked = {}
for shape in sys.argv[3].split(","):
    rows = [r for r in probe["shapes"][shape]["algos"] if "config" in r]
    fastest = min(rows, key=lambda r: r["us"])
    chosen = [r for r in rows if r["rank"] <= 1] + ([fastest] if fastest["rank"] > 1 else [])
    algos = {f"h100_rank{r['rank']}": r["config"] for r in chosen}
    order = {f"h100_rank{r['rank']}": float(r["rank"]) for r in chosen}   # heuristic order, not the timing
    if fastest["rank"] > 1:
        order[f"h100_rank{fastest['rank']}"] = 0.5                      # the fastest timed right after rank 0
    problem = Problem.parse(shape)
    price = model_order(problem, device=device) if device else None
    seeds = vendor_seeds(problem, spaces, algos, order, bases, count, set(), price=price, revision=1)   # session 48's
    for g, _, note in seeds:
        pick(picked, g, f"{shape}: {note}")
    print(shape, [(g.id[:8], n.split("): ")[1]) for g, _, n in seeds])
write_genomes(picked, out, out.parent / "notes.json")
