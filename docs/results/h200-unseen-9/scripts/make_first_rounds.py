"""The first rounds of h200-unseen-9-a (wave_cooperative false) and -b (true), as the campaigns run on the simulator
propose them with today's code: every first-round genome of either arm, one file each, in OUT/kernels, and
OUT/first_rounds.json (arm -> shape -> genome ids). call_fr9.sh times them all at the eight shapes in one device call;
each arm's first-round best per shape is then read off the bench with first_rounds.json.
Run from the repository root: python docs/results/h200-unseen-9/scripts/make_first_rounds.py OUT"""
import json
import sys
from pathlib import Path

from experiments.prebuild import first_round_genomes

out = Path(sys.argv[1])
(out / "kernels").mkdir(parents=True, exist_ok=True)
rounds = {}
for arm in "ab":
    by_shape: dict = {}
    for shape, g in first_round_genomes(f"experiments/campaigns/h200-unseen-9-{arm}.yaml"):
        by_shape.setdefault(shape, []).append(g.id)
        g.save(out / "kernels" / f"{g.family}-{g.id}.json")
    rounds[arm] = by_shape
(out / "first_rounds.json").write_text(json.dumps(rounds, indent=1))
print({arm: {s: len(v) for s, v in m.items()} for arm, m in rounds.items()})
