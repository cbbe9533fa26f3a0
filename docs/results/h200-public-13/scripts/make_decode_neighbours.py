"""Session 62: the neighbourhood of bedab432 (sm90_swapab ws 64x16, tile K 128, a 4x1 cluster), the kernel that leads
both public M = 16 shapes on the H200 (1.020x, 1.073x) and whose neighbours no H200 has timed: one parameter changed
at a time (the space's own neighbours, less those the record's bench already times and the ring of two stages), and
the ring fixed at 4, 6 and 8 stages where CUTLASS's automatic count is the base. Writes
kernels/decode-neighbours/hall_of_fame/<shape>.json for `bench --per-shape`. Run from the repository root."""
import json
from pathlib import Path

from experiments.bench import load_kernels
from genome import Genome, Problem
from templates import family_registry

SHAPES = ("16x6144x4096", "16x4096x14336")
OUT = Path("docs/results/h200-public-13/kernels/decode-neighbours")
P = "docs/results/h200-public-10"
TIMED = [f"{P}/selection", "docs/results/h200-tilek128/probe", "docs/results/skinny-y-resident/kernels",
         f"{P}/public-mirrors", f"{P}/public-mirrors-v2-new", "docs/results/h200-mirrors-rev2/mirrors-new"]

space = family_registry().resolve("sm90_swapab").space
base = Genome.from_dict(json.loads(Path("docs/results/skinny-swapab/kernels/sm90_swapab-bedab432.json").read_text()))
timed = {g.id for g in load_kernels(TIMED)}
problems = [Problem.parse(s) for s in SHAPES]
picked = [n for n in space.neighbours(base) if n.get("stages") != 2]
picked += [base.with_params(stages=s) for s in (4, 6, 8)]
picked = [space.validate(g) for g in picked if all(space.is_valid(g, p) for p in problems) and g.id not in timed]
(OUT / "hall_of_fame").mkdir(parents=True, exist_ok=True)
for shape in SHAPES:
    (OUT / "hall_of_fame" / f"{shape}.json").write_text(json.dumps([g.to_dict() for g in picked], indent=1))
for g in picked:
    print(g.id[:8], {k: v for k, v in dict(g.params).items() if dict(base.params).get(k) != v})
print(len(picked), "genomes")
