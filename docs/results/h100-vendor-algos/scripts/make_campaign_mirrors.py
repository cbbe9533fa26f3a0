"""The mirrors a campaign would time first at each shape (population.vendor_seeds: 2, the campaign families below),
from the algorithms and times a bench's vendor baselines recorded there. usage: BENCH_JSON OUT_DIR"""
import json, sys
from pathlib import Path
from evolution.seeding import load_handpicked
from evolution.vendor_seeds import vendor_seeds
from genome import Problem
from templates import family_registry
R = family_registry()
FAMILIES = ["sm90_cutlass", "sm90_lean", "sm90_swapab", "sm90_splitk"]
spaces = [R.resolve(f).space for f in FAMILIES]
hp = load_handpicked(FAMILIES)
d = json.load(open(sys.argv[1]))
out = Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
picked = {}
for sh in d["shapes"]:
    bs = sh["baselines"]
    times = {n: v["median_us"] for n, v in bs["device"].items() if v and v.get("median_us")}
    seeds = vendor_seeds(Problem.parse(sh["problem"]), spaces, bs.get("algorithms", {}), times, hp, 2, set())
    for g, _, note in seeds:
        picked.setdefault(g.id, (g, []))[1].append(f"{sh['problem']}: {note}")
    print(sh["problem"], [(g.id[:8], n.split("): ")[1]) for g, _, n in seeds])
notes = {}
for gid, (g, why) in picked.items():
    (out / f"{g.family}-{gid[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1) + "\n")
    notes[f"{g.family}-{gid[:8]}"] = why
(out.parent / "campaign-mirror-notes.json").write_text(json.dumps(notes, indent=1) + "\n")
print(len(picked), "genomes")
