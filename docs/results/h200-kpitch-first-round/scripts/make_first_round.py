"""The first round a campaign with h200-unseen-9-b's settings (six families, two one-wave seeds, the cooperative
one-wave seeds) proposes at four K-pitch shapes, on the simulator, as a campaign-like folder for `bench --per-shape`:
OUT/hall_of_fame/<shape>.json. At 2000x2000x1000 the best kernel recorded there (sm90_lean 128x128, 2x1 cluster,
0.765x in ../h200-tile-n72) is added as a reference. Prints how many builds the local cache (.kc/cache) lacks.
Run from the repository root: python docs/results/h200-kpitch-first-round/scripts/make_first_round.py OUT"""
import json
import sys
from pathlib import Path

from evaluator.compile import Compiler
from experiments.prebuild import simulated_proposals
from experiments.schema import load_campaign

SHAPES = ["2000x2000x1000", "2500x2500x1000", "1500x3000x2000", "3000x1000x3000"]
cfg = load_campaign("experiments/campaigns/h200-unseen-9-b.yaml",
                    {"evaluator.backend": "simulator", "budget.wall_seconds": None, "shapes": SHAPES})
by: dict = {}
for shape, g in simulated_proposals(cfg, first_round_only=True):
    by.setdefault(shape, {})[g.id] = g.to_dict()
recorded = json.loads(Path("docs/results/h200-tile-n72/bench/bench.json").read_text())
for s in recorded["shapes"]:
    if s["problem"] == "2000x2000x1000":
        ok = [k for k in s["kernels"] if k["measurement"]["status"] == "ok"]
        best = min(ok, key=lambda k: k["measurement"]["device"]["median_us"])["genome"]
        by["2000x2000x1000"].setdefault(best["id"], best)
hall = Path(sys.argv[1]) / "hall_of_fame"
hall.mkdir(parents=True, exist_ok=True)
for shape, gs in by.items():
    (hall / f"{shape}.json").write_text(json.dumps(list(gs.values()), indent=1))
from genome import Genome  # noqa: E402
compiler = Compiler.default(".kc/cache")
genomes = {i: Genome.from_dict(d) for gs in by.values() for i, d in gs.items()}
missing = {compiler.key_of(g) for g in genomes.values() if not compiler.cached(g)}
print({s: len(v) for s, v in by.items()}, len(genomes), "genomes,", len(missing), "builds missing from .kc/cache")
