"""Write ../probe/hall_of_fame/SHAPE.json: tile_k 128 twins of the best tile_k 64 configurations at three
bandwidth-bound public shapes (see ../README.md). Run from the repository root:
python docs/results/h200-tilek128/scripts/make_probe.py"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
from genome import Genome
from genome.problem import Problem
from templates.family import get_family
base = {"cluster_m": 1, "cluster_n": 2, "decomposition": "heuristic", "epilogue": "tma", "raster": "heuristic", "reduction": "deterministic", "schedule": "cooperative", "scheduler": "persistent", "splits": 1, "stages": 0, "swizzle": 1, "tile_k": 128, "tile_m": 128, "tile_n": 224}
probes = {
 "128x28672x4096": [("sm90_cutlass", dict(tile_n=224)), ("sm90_cutlass", dict(tile_n=256)), ("sm90_cutlass", dict(tile_n=224, cluster_n=1)),
   ("sm90_cutlass", dict(tile_n=256, cluster_n=4)), ("sm90_cutlass", dict(tile_n=224, cluster_n=4)),
   ("sm90_swapab", dict(tile_m=256, tile_n=128, cluster_m=2, cluster_n=1)), ("sm90_swapab", dict(tile_m=256, tile_n=128, cluster_m=4, cluster_n=1))],
 "256x12288x4096": [("sm90_cutlass", dict(tile_n=192)), ("sm90_cutlass", dict(tile_n=192, cluster_n=1)),
   ("sm90_lean", dict(tile_n=192, schedule="ws", cluster_m=2, cluster_n=1))],
 "512x8192x28672": [("sm90_cutlass", dict(tile_n=256, cluster_m=2, cluster_n=1)), ("sm90_cutlass", dict(tile_m=256, tile_n=128, cluster_m=1, cluster_n=2))],
}
for shape, lst in probes.items():
    P = Problem.parse(shape); out = []
    for fam, over in lst:
        p = dict(base); p.update(over)
        g = Genome.make(fam, p)
        sp = get_family(fam).space
        g2 = sp.normalise(g)
        v = sp.violations(g2, P)
        print(shape, fam, over, g2.id[:8], [str(x) for x in v])
        if not v: out.append(g2.to_dict())
    (Path(__file__).resolve().parents[1] / "probe/hall_of_fame" / f"{shape}.json").write_text(json.dumps(out, indent=1) + "\n")
