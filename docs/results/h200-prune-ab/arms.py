"""Each arm's best kernel per shape in the one bench of the halls (bench.json: every shape timed the union of
the halls, interleaved with the six vendor baselines). Arm A: family_prune_ratio 3.0, arm B: 1.5, both with
the refitted sm80_cutlass model and 180 s of wall; and, for scale, ../h200-swapab-ab's arm A (ratio 3.0,
the model before the refit, 300 s of wall, ten shapes).

    python docs/results/h200-prune-ab/arms.py > docs/results/h200-prune-ab/arms.md
"""
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
from experiments.compare_halls import compare  # noqa: E402

print(compare(here / "bench.json", {"ratio 3.0": [here / "campaign-A"], "ratio 1.5": [here / "campaign-B"]}))
print()
print(compare(here / "bench.json", {"ratio 3.0, 300 s, old model": [here.parent / "h200-swapab-ab" / "campaign-A"],
                                    "ratio 1.5": [here / "campaign-B"]}))
