"""The two best kernels any H200 bench under docs/results recorded at each of the mirror suite's shapes (ratio to
that bench's best vendor baseline; ../../recorded-best-public/best_recorded.py's reading, probe-only parameters
left out), as genome files for an A/B, their ratios and benches in ref-notes.json. usage: best_refs.py OUT_DIR"""
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "recorded-best-public"))
import best_recorded as br
from genome import Genome
from templates import family_registry
R = family_registry()
shapes = {"1000x1000x1000","2048x2048x2048","4096x1024x1024","128x28672x4096","256x12288x4096","1280x1280x1280","1536x1536x1536","3072x1024x2048","768x768x768","8192x8192x1024"}
best = {}
for problem, ratio, genome, bench in br.kernel_ratios(shapes, device="H200"):
    if any(genome.get("params", {}).get(k) for k in br.PROBE_ONLY):
        continue
    d = best.setdefault(problem, {})
    if ratio > d.get(genome["id"], (0,))[0]:
        d[genome["id"]] = (ratio, genome, bench)
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
picked = {}
for shape in sorted(shapes):
    top = sorted(best.get(shape, {}).values(), key=lambda t: -t[0])
    n = 0
    for ratio, genome, bench in top:
        try:
            g = Genome.from_dict({k: genome[k] for k in ("family", "params", "patches", "id") if k in genome})
            g = R.resolve(g.family).space.validate(g)
        except Exception as e:
            print("skip", shape, genome["id"][:8], e); continue
        picked.setdefault(g.id, (g, []))[1].append(f"{shape}: {ratio:.3f} in {bench}")
        n += 1
        if n == 2: break
    print(shape, [(t[1]["id"][:8], round(t[0], 3)) for t in top[:2]], len(best.get(shape, {})))
notes = {}
for gid, (g, why) in picked.items():
    (out / f"{g.family}-{gid[:8]}.json").write_text(json.dumps(g.to_dict(), indent=1) + "\n")
    notes[f"{g.family}-{gid[:8]}"] = why
(out.parent / "ref-notes.json").write_text(json.dumps(notes, indent=1) + "\n")
print(len(picked), "genomes")
