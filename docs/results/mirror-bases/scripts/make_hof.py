"""Per-shape kernel lists for `evogemm bench --per-shape` (a campaign folder's hall_of_fame/<shape>.json): each
shape's genomes of the base sweep (sweep/, notes.json) and its two reference kernels (../h100-vendor-algos/refs,
ref-notes.json: the two best any H200 bench recorded there).
usage: make_hof.py OUT_DIR"""
import json
import sys
from pathlib import Path

here = Path(__file__).resolve().parents[1]
refs = here.parent / "h100-vendor-algos"
lists: dict = {}
for name, whys in json.loads((here / "notes.json").read_text()).items():
    for why in whys:
        lists.setdefault(why["shape"], {})[name] = here / "sweep" / f"{name}.json"
for name, whys in json.loads((refs / "ref-notes.json").read_text()).items():
    for why in whys:
        lists.setdefault(why.split(":")[0], {})[name] = refs / "refs" / f"{name}.json"
out = Path(sys.argv[1]) / "hall_of_fame"
out.mkdir(parents=True, exist_ok=True)
for shape, files in lists.items():
    (out / f"{shape}.json").write_text(json.dumps([json.loads(f.read_text()) for f in files.values()]) + "\n")
    print(shape, len(files))
