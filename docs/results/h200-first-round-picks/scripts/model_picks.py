"""Model picks: per shape and family, the genomes of the family's space the simulator prices fastest, one per
(schedule, tile) -- what a `model_seeds` option would add to a campaign's first round."""
import random, sys
from pathlib import Path
from genome import Problem
from templates import family_registry
from evaluator.simulator import SimulatedEvaluator
from evolution.rng import derive_seed

def picks(problem, space, price, count, seed, draws=400):
    rng = random.Random(seed)
    seen, cands = set(), []
    for _ in range(draws):
        try:
            g = space.validate(space.sample(rng), problem)
        except ValueError:
            continue
        if g.id not in seen:
            seen.add(g.id)
            cands.append((price(g), g.id, g))
    cands.sort(key=lambda t: t[:2])
    out, tiles = [], set()
    for us, _, g in cands:
        key = (g.get("schedule"), g.get("tile_m"), g.get("tile_n"))
        if key in tiles:
            continue
        tiles.add(key)
        out.append((us, g))
        if len(out) == count:
            break
    return out

if __name__ == "__main__":
    out = Path(sys.argv[1]); shapes = sys.argv[2].split(","); fams = sys.argv[3].split(","); count = int(sys.argv[4])
    sim = SimulatedEvaluator(device="h200")
    reg = family_registry()
    for s in shapes:
        p = Problem.parse(s)
        for fam in fams:
            space = reg.resolve(fam).space
            for us, g in picks(p, space, lambda g: sim.predict_us(g, p), count, derive_seed(0, "model_seeds", fam, s)):
                g.save(out / f"{s}-{fam}-{g.id[:8]}.json")
                print(s, fam, round(us, 2), g.short() if hasattr(g, "short") else g.id)
