"""Each arm's best kernel per shape in the one bench of both arms' halls (bench.json: every shape
timed the union of the two halls, interleaved with the six vendor baselines). Arm A: the public
campaign's six families; arm B: the same and sm90_swapab.

    python docs/results/h200-swapab-ab/arms.py > docs/results/h200-swapab-ab/arms.md
"""
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
from experiments.compare_halls import compare  # noqa: E402

print(compare(here / "bench.json", {"six families": [here / "campaign-A"], "with sm90_swapab": [here / "campaign-B"]}))
