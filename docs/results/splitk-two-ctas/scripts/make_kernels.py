"""The genomes of the session 54 bench (../README.md): sm90_swapab_splitk's non-persistent `ws` schedule (one CTA a
work tile of one K split) with an explicit, small stage count, so that two or three CTAs share an SM and each hides
the others' start, drain and loads; the control with the automatic (maximal) stage count, one CTA an SM. Each build
with K split 4, 8 and 16 ways (ksplit is a runtime knob: the three share one build), the reduction launched behind
the GEMM (pdl) with the grouped threads, as in the record's kernel at 512x512x16384. References: that kernel's
family seeds (sm90_splitk ping-pong 64x128, grouped, pdl, at the same three splits; cooperative 128x128 with 8).
usage (repository root): python docs/results/splitk-two-ctas/scripts/make_kernels.py OUT_DIR"""
import json
import sys
from pathlib import Path

from genome import Genome
from templates.family import get_family

FAMILY = "sm90_swapab_splitk"
# name: (tile_m, tile_n, tile_k, stages, cluster_m); tile_m along N, tile_n along M (the transposed frame)
BUILDS = {
    "ws_64x128x64_st4": (64, 128, 64, 4, 1),
    "ws_64x128x64_st3": (64, 128, 64, 3, 1),
    "ws_64x128x64_st4_c2x1": (64, 128, 64, 4, 2),
    "ws_64x128x128_st2": (64, 128, 128, 2, 1),
    "ws_64x96x64_st4": (64, 96, 64, 4, 1),
    "ws_64x64x64_st4": (64, 64, 64, 4, 1),
    "ws_64x64x64_st6": (64, 64, 64, 6, 1),
    "ws_64x128x64_auto": (64, 128, 64, 0, 1),
}
SPLITS = (4, 8, 16)
REFERENCES = ("pp_64x128x64_k4_grouped_pdl", "coop_128x128x64_k8")


def genomes():
    fam = get_family(FAMILY)
    space = fam.space
    base = dict(fam.seeds())["ws_64x16x64_c4x1_k2"].param_dict
    for name, (tm, tn, tk, st, cm) in BUILDS.items():
        g = Genome.make(FAMILY, {**base, "tile_m": tm, "tile_n": tn, "tile_k": tk, "stages": st, "cluster_m": cm,
                                 "cluster_n": 1, "pdl": 1, "reduce": "grouped"})
        for ksplit in SPLITS:
            yield space.normalise(g.with_params(ksplit=ksplit)), space
    ref = get_family("sm90_splitk")
    seeds = dict(ref.seeds())
    for name in REFERENCES:
        for ksplit in (SPLITS if name.startswith("pp_") else (8,)):
            yield ref.space.normalise(seeds[name].with_params(ksplit=ksplit)), ref.space


def main(out: str) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for g, space in genomes():
        assert space.is_valid(g), g.param_dict
        (folder / f"{g.family}-{g.id[:8]}.json").write_text(json.dumps(g.to_dict(), indent=2, sort_keys=True) + "\n")
        n += 1
    print(f"{n} genomes -> {folder}")


if __name__ == "__main__":
    main(sys.argv[1])
