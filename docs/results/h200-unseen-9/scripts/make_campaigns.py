"""Create the campaign folders of the A/B of population.wave_cooperative on the CPU machine (session 39): arms a
and b of experiments/campaigns/h200-unseen-9-{a,b}.yaml, each split into two halves of four shapes with 240 s of
wall, in .kc/s39/camp-{a,b}{1,2}. Then build the first rounds of arm B (they hold arm A's):
`EVOGEMM_CACHE=.kc/s39/cache evogemm prebuild --jobs 2 experiments/campaigns/h200-unseen-9-b.yaml` (67 builds),
`tar cJf .kc/s39/cache.txz -C .kc/s39 cache`, and on the device `scripts/call_ab.sh 1 a b`, `call_ab.sh 2 b a`,
`call_bench.sh` (carry .kc/whl and .kc/s39 without its cache folder). Run from the repository root."""
from pathlib import Path

from experiments.campaign import create_campaign
from experiments.schema import load_campaign

HALVES = {1: ["1792x2304x4096", "1536x2560x6144", "2560x1536x1024", "1920x1920x3072"],
          2: ["2304x2048x8192", "3072x1536x4096", "1408x3328x2048", "1664x2048x5120"]}
for arm in "ab":
    path = Path(f"experiments/campaigns/h200-unseen-9-{arm}.yaml")
    for half, shapes in HALVES.items():
        config = load_campaign(path, overrides={"shapes": shapes, "budget.wall_seconds": 240})
        print(create_campaign(config, f".kc/s39/camp-{arm}{half}", source=str(path.resolve())))
