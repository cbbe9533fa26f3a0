"""Write the two arms' campaign files for the sm90_swapab A/B (session 22): h200-unseen.yaml's settings,
ten shapes never measured, 300 s wall, seed_from made absolute (ROOT = the repository with the data).
Arm A: the six families of the public campaign; arm B: the same and sm90_swapab.
Usage: mkarms.py ROOT OUT_DIR BACKEND(gpu|simulator)"""
import sys
from pathlib import Path

import yaml

root, out_dir, backend = Path(sys.argv[1]).resolve(), Path(sys.argv[2]), sys.argv[3]
SHAPES = ["2560x2560x2560", "1536x4608x1536", "5632x1024x4096", "384x5120x13824", "3328x3328x1024",
          "1152x8192x2048", "7168x1536x3072", "896x896x8192", "640x2816x5120", "2816x640x5120"]
camp = yaml.safe_load(open(root / "experiments/campaigns/h200-unseen.yaml"))
camp["shapes"] = SHAPES
camp["seed_from"] = [str((root / "experiments/campaigns" / p).resolve()) for p in camp["seed_from"]]
camp["budget"]["wall_seconds"] = 300
camp["evaluator"]["backend"] = backend
if backend == "simulator":
    camp["evaluator"].pop("timing", None)
    camp["evaluator"].pop("batch_size", None)
    camp["budget"].pop("wall_seconds")
out_dir.mkdir(parents=True, exist_ok=True)
families = [f for f in camp["families"] if f != "sm90_swapab"]
for arm, fams in (("A", families), ("B", [*families, "sm90_swapab"])):
    c = dict(camp, name=f"swapab-{arm}", families=fams)
    (out_dir / f"swapab-{arm}.yaml").write_text(yaml.safe_dump(c, sort_keys=False))
print(out_dir)
