"""The mirrors a campaign would time first at each shape (population.vendor_seeds: 2, genome_files.FAMILIES), from
the algorithms and times a bench's vendor baselines recorded there, the rest of each mirror's parameters from the
hand-picked base the simulator model of DEVICE prices fastest (as a campaign does with its seed device, the H200 by
default), their reasons in notes.json beside OUT_DIR (committed as ../campaign-mirror*-notes.json).
usage: make_campaign_mirrors.py BENCH_JSON OUT_DIR [DEVICE]
(session 48's first A/B used the version before that choice: the nearest base in tile, `../campaign-mirrors`)"""
import json
import sys
from pathlib import Path

from genome_files import campaign_seeds, pick, spaces_and_bases, write_genomes

spaces, bases = spaces_and_bases()
bench = json.load(open(sys.argv[1]))
out = Path(sys.argv[2])
device = sys.argv[3] if len(sys.argv) > 3 else "h200"
picked = {}
for shape in bench["shapes"]:
    _, seeds = campaign_seeds(shape, spaces, bases, 2, device, revision=1)   # session 48's mirrors
    for g, _, note in seeds:
        pick(picked, g, f"{shape['problem']}: {note}")
    print(shape["problem"], [(g.id[:8], n.split("): ")[1], g.get("schedule")) for g, _, n in seeds])
write_genomes(picked, out, out.parent / "notes.json")
