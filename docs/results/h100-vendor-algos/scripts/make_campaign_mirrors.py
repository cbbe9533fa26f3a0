"""The mirrors a campaign would time first at each shape (population.vendor_seeds: 2, the campaign families below),
from the algorithms and times a bench's vendor baselines recorded there, the rest of each mirror's parameters from
the hand-picked base the simulator model of DEVICE prices fastest (as a campaign does with its seed device, the
H200 by default). usage: make_campaign_mirrors.py BENCH_JSON OUT_DIR [DEVICE]
(session 48's first A/B used the version before that choice: the nearest base in tile, `../campaign-mirrors`)"""
import json, sys
from pathlib import Path
from evolution.seeding import load_handpicked, model_order
from evolution.vendor_seeds import vendor_seeds
from genome import Problem
from templates import family_registry
R = family_registry()
FAMILIES = ["sm90_cutlass", "sm90_lean", "sm90_swapab", "sm90_splitk"]
spaces = [R.resolve(f).space for f in FAMILIES]
hp = load_handpicked(FAMILIES)
d = json.load(open(sys.argv[1]))
out = Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
device = sys.argv[3] if len(sys.argv) > 3 else "h200"
picked = {}
for sh in d["shapes"]:
    bs = sh["baselines"]; problem = Problem.parse(sh["problem"])
    times = {n: v["median_us"] for n, v in bs["device"].items() if v and v.get("median_us")}
    seeds = vendor_seeds(problem, spaces, bs.get("algorithms", {}), times, hp, 2, set(),
                         price=model_order(problem, device=device))
    for g, _, note in seeds:
        picked.setdefault(g.id, (g, []))[1].append(f"{sh['problem']}: {note}")
    print(sh["problem"], [(g.id[:8], n.split("): ")[1], g.get("schedule")) for g, _, n in seeds])
notes = {}
for gid, (g, why) in picked.items():
    (out / f"{g.family}-{gid[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1) + "\n")
    notes[f"{g.family}-{gid[:8]}"] = why
(out.parent / "notes.json").write_text(json.dumps(notes, indent=1) + "\n")
print(len(picked), "genomes")
