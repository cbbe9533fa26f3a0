"""Create the four campaign folders of the A/B on the CPU machine (session 38): arms a and b of
experiments/campaigns/h200-unseen-8-{a,b}.yaml, each split into two halves of four shapes with 240 s of wall, in
.kc/s38/camp-{a,b}{1,2}. Then `evogemm prebuild --jobs 2 experiments/campaigns/h200-unseen-8-b.yaml` (its first
rounds hold arm A's), `tar cJf .kc/s38/cache.txz -C .kc cache`, and on the device `scripts/call_ab.sh 1 a b`,
`call_ab.sh 2 b a`, `call_bench.sh` (carry .kc/whl and .kc/s38). Run from the repository root."""
from pathlib import Path

from experiments.campaign import create_campaign
from experiments.schema import load_campaign

HALVES = {1: ["1792x1792x1792", "1152x3072x2048", "1920x1280x3072", "1024x2560x2560"],
          2: ["2560x1024x4096", "1536x2048x1024", "768x4096x2048", "1280x2304x1536"]}
for arm in "ab":
    path = Path(f"experiments/campaigns/h200-unseen-8-{arm}.yaml")
    for half, shapes in HALVES.items():
        config = load_campaign(path, overrides={"shapes": shapes, "budget.wall_seconds": 240})
        print(create_campaign(config, f".kc/s38/camp-{arm}{half}", source=str(path.resolve())))
