"""The sm90_swapab_splitk genomes of the session 53 bench: the family's seeds and two more tiles (64x16 without a
cluster, 64x16 with tile K 128 in a 2x1 cluster), each with K split 2, 4 and 8 ways (ksplit is a runtime knob: the
three share one build). usage (repository root): python docs/results/swapab-splitk/scripts/make_kernels.py OUT_DIR"""
import json
import sys
from pathlib import Path

from genome import Genome
from templates.family import get_family

FAMILY = "sm90_swapab_splitk"
EXTRA = {"ws_64x16x64_c1x1": dict(schedule="ws", tile_m=64, tile_n=16, tile_k=64, cluster_m=1, cluster_n=1),
         "ws_64x16x128_c2x1": dict(schedule="ws", tile_m=64, tile_n=16, tile_k=128, cluster_m=2, cluster_n=1)}


def main(out: str) -> None:
    fam = get_family(FAMILY)
    space = fam.space
    seeds = dict(fam.seeds())
    base = seeds["ws_64x16x64_c4x1_k2"].param_dict
    builds = dict(seeds)
    for name, over in EXTRA.items():
        builds[name] = space.normalise(Genome.make(FAMILY, {**base, **over}))
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, genome in sorted(builds.items()):
        for ksplit in (2, 4, 8):
            g = space.normalise(genome.with_params(ksplit=ksplit))
            assert space.is_valid(g), (name, ksplit)
            (folder / f"{FAMILY}-{g.id[:8]}.json").write_text(json.dumps(g.to_dict(), indent=2, sort_keys=True) + "\n")
            n += 1
    print(f"{n} genomes, {len(builds)} builds -> {folder}")


if __name__ == "__main__":
    main(sys.argv[1])
