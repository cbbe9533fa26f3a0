"""Each arm's best kernel per shape in the one bench of both arms' halls of fame (bench.json: every
shape timed the union of the two halls, interleaved with the six vendor baselines). Arm A: the
public campaign's settings as shipped; arm B: the same with screen 24 and 38 evaluations.

    python docs/results/h200-fresh-screen/arms.py > docs/results/h200-fresh-screen/arms.md
"""
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parents[2]))
from experiments.compare_halls import compare  # noqa: E402

print(compare(here / "bench.json", {"A": [here / "campaign-A"], "B": [here / "campaign-B"]}))
