"""The vendor mirrors a new campaign (revision 2 of evolution/vendor_seeds.py, `population.vendor_seeds: COUNT`,
the H200 seed model choosing each one's base) would time first at every shape of a bench, from the algorithms its
H200 vendor baselines recorded; written as OUT_DIR/FAMILY-ID8.json with notes.json beside OUT_DIR, and the ones
no folder in SKIP_DIRS holds (already benched) listed in new.txt beside it.
usage: make_rev2_mirrors.py BENCH_JSON OUT_DIR COUNT [SKIP_DIR ...]"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "h100-vendor-algos" / "scripts"))
from genome_files import campaign_seeds, pick, spaces_and_bases, write_genomes  # noqa: E402

from evolution.campaign_spaces import VENDOR_MIRRORS_REVISION  # noqa: E402

spaces, bases = spaces_and_bases()
bench = json.load(open(sys.argv[1]))
out, count = Path(sys.argv[2]), int(sys.argv[3])
known = {f.stem.split("-")[1] for d in sys.argv[4:] for f in Path(d).rglob("*.json") if "-" in f.stem}
picked = {}
for shape in bench["shapes"]:
    for g, _, note in campaign_seeds(shape, spaces, bases, count, "h200", VENDOR_MIRRORS_REVISION)[1]:
        pick(picked, g, f"{shape['problem']}: {note}")
write_genomes(picked, out, out.parent / "notes.json")
new = sorted(f"{g.family}-{gid[:8]}" for gid, (g, _) in picked.items() if gid[:8] not in known)
(out.parent / "new.txt").write_text("\n".join(new) + "\n")
print(len(new), "not benched before")
