"""Each campaign's best kernel per shape in the one bench of both (bench.json: every shape timed the
union of the screen campaign's halls and the previous campaign's, interleaved with the six vendor
baselines).

    python docs/results/h200-public-screen-partial/arms.py > docs/results/h200-public-screen-partial/arms.md
"""
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
from experiments.compare_halls import compare  # noqa: E402

print(compare(here / "bench.json", {"previous": [here.parent / "h200-public-3" / f"campaign-{h}" for h in "AB"],
               "screen": [here / f"campaign-{h}" for h in "AB"]}))
