"""The first-round genomes of scripts/campaign-as-shipped.yaml (h200-unseen-7's settings at six unseen shapes), as the
campaign run on the simulator proposes them (experiments/prebuild.py), saved one file a genome with the shape map:
python first_round.py OUT_DIR MAP.json"""
import json
import sys
from pathlib import Path

from experiments.prebuild import first_round_genomes

out, by_shape = Path(sys.argv[1]), {}
for shape, genome in first_round_genomes(Path(__file__).with_name("campaign-as-shipped.yaml")):
    by_shape.setdefault(shape, []).append(genome.id)
    genome.save(out / f"{genome.family}-{genome.id[:8]}.json")
json.dump(by_shape, open(sys.argv[2], "w"), indent=0)
