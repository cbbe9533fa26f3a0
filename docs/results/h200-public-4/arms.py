"""Each campaign's best kernel per shape in the one bench of both (bench.json: every shape timed the
union of this run's halls and the previous run's (h200-public-3), interleaved with the six vendor
baselines).

    python docs/results/h200-public-4/arms.py > docs/results/h200-public-4/arms.md
"""
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
from experiments.compare_halls import compare  # noqa: E402

print(compare(here / "bench.json", {"previous": [here.parent / "h200-public-3" / f"campaign-{h}" for h in "AB"],
               "new": [here / f"campaign-{h}" for h in "AB"]}))
