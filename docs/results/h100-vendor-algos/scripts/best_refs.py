"""The two best kernels any H200 bench under docs/results recorded at each of ../suite-mirrors.yaml's shapes (ratio
to that bench's best vendor baseline; ../../recorded-best-public/best_recorded.py's reading, probe-only parameters
left out), as genome files for an A/B, their ratios and benches in ref-notes.json beside OUT_DIR.
usage: best_refs.py OUT_DIR"""
import sys
from pathlib import Path

import yaml
from genome_files import pick, write_genomes

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "recorded-best-public"))
import best_recorded as br  # noqa: E402

from genome import Genome  # noqa: E402
from templates import family_registry  # noqa: E402

registry = family_registry()
suite = yaml.safe_load((Path(__file__).resolve().parent.parent / "suite-mirrors.yaml").read_text())
shapes = {"x".join(map(str, s)) for group in suite["shapes"].values() for s in group}
best: dict = {}
for problem, ratio, genome, bench in br.kernel_ratios(shapes, device="H200"):
    if any(genome.get("params", {}).get(k) for k in br.PROBE_ONLY):
        continue
    seen = best.setdefault(problem, {})
    if ratio > seen.get(genome["id"], (0,))[0]:
        seen[genome["id"]] = (ratio, genome, bench)
out = Path(sys.argv[1])
picked: dict = {}
for shape in sorted(shapes):
    top = sorted(best.get(shape, {}).values(), key=lambda t: -t[0])
    taken = 0
    for ratio, genome, bench in top:
        try:
            g = Genome.from_dict({k: genome[k] for k in ("family", "params", "patches", "id") if k in genome})
            g = registry.resolve(g.family).space.validate(g)
        except Exception as exc:   # a genome today's spaces refuse: said, and passed over
            print("skip", shape, genome["id"][:8], exc)
            continue
        pick(picked, g, f"{shape}: {ratio:.3f} in {bench}")
        taken += 1
        if taken == 2:
            break
    print(shape, [(t[1]["id"][:8], round(t[0], 3)) for t in top[:2]], len(best.get(shape, {})))
write_genomes(picked, out, out.parent / "ref-notes.json")
