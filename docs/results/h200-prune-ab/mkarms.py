"""Write the two arms' campaign files for the family-prune A/B (session 22): h200-unseen.yaml's settings
(with the sm80_cutlass model refitted), six of the ten shapes of ../h200-swapab-ab (those where the
ratio leaves out most), 180 s wall (both arms run one after the other on one GPU), seed_from made
absolute (ROOT = the repository with the data). Arm A: family_prune_ratio 3.0 (as committed before);
arm B: 1.5. Usage: mkarms.py ROOT OUT_DIR BACKEND(gpu|simulator)"""
import sys
from pathlib import Path

import yaml

root, out_dir, backend = Path(sys.argv[1]).resolve(), Path(sys.argv[2]), sys.argv[3]
SHAPES = ["2560x2560x2560", "5632x1024x4096", "3328x3328x1024", "1152x8192x2048", "7168x1536x3072",
          "2816x640x5120"]
camp = yaml.safe_load(open(root / "experiments/campaigns/h200-unseen.yaml"))
camp["shapes"] = SHAPES
camp["seed_from"] = [str((root / "experiments/campaigns" / p).resolve()) for p in camp["seed_from"]]
camp["budget"]["wall_seconds"] = 180
camp["evaluator"]["backend"] = backend
if backend == "simulator":
    camp["evaluator"].pop("timing", None)
    camp["evaluator"].pop("batch_size", None)
    camp["budget"].pop("wall_seconds")
out_dir.mkdir(parents=True, exist_ok=True)
for arm, ratio in (("A", 3.0), ("B", 1.5)):
    c = dict(camp, name=f"prune-{arm}")
    c["population"] = dict(camp["population"], family_prune_ratio=ratio)
    (out_dir / f"prune-{arm}.yaml").write_text(yaml.safe_dump(c, sort_keys=False))
print(out_dir)
