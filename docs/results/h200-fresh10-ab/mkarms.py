"""Write the two arms' campaign files for the fresh-shapes A/B (session 20): h200-unseen.yaml's settings,
ten shapes never measured, 300 s wall, seed_from made absolute (ROOT = the repository with the data)."""
import sys, yaml
from pathlib import Path
root, out_dir, backend = Path(sys.argv[1]).resolve(), Path(sys.argv[2]), sys.argv[3]
SHAPES = ["1792x1792x4096", "2560x4096x3072", "6144x1536x2048", "960x7168x4096", "384x11008x4096",
          "4608x4608x2304", "1280x10240x1280", "3584x2048x7168", "704x4096x8192", "2304x2304x9216"]
camp = yaml.safe_load(open(root / "experiments/campaigns/h200-unseen.yaml"))
camp["shapes"] = SHAPES
camp["seed_from"] = [str((root / "experiments/campaigns" / p).resolve()) for p in camp["seed_from"]]
camp["budget"]["wall_seconds"] = 300
camp["evaluator"]["backend"] = backend
if backend == "simulator":
    camp["evaluator"].pop("timing", None); camp["evaluator"].pop("batch_size", None)
    camp["budget"]["evaluations_per_shape"] = 34
    camp["budget"].pop("wall_seconds")
out_dir.mkdir(parents=True, exist_ok=True)
for arm in "AB":
    c = dict(camp, name=f"fresh10-{arm}")
    (out_dir / f"fresh10-{arm}.yaml").write_text(yaml.safe_dump(c, sort_keys=False))
print(out_dir)
