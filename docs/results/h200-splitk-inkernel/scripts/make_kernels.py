"""The kernels of the in-kernel split-K A/B (session 41), as a campaign-like folder whose hall_of_fame/<shape>.json
lists the kernels `bench --per-shape` times at that shape. For each shape and each of five base tiles, the most
splits (a ksplit choice) whose tiles x splits fit 132 SMs and split K evenly; each as `fixup: inkernel` and as
its twins with the reduction launch (serial, no pdl; and the faster of the launch variants measured in session
26: pdl + grouped for ping-pong, grouped for cooperative); plus the record's best kernel at the public shapes.
Usage, from the repository root: python docs/results/h200-splitk-inkernel/scripts/make_kernels.py OUT_FOLDER"""
import json
import sys
from pathlib import Path

from genome import Genome, Problem
from genome.sm90_splitk_space import KSPLIT
from templates import family_registry

SHAPES = ["512x512x16384", "64x64x4096", "256x256x65536", "640x640x12288", "200x1536x8960", "896x896x8192",
          "96x4096x14336", "128x4096x14336", "384x1024x8192", "256x2048x8192", "1024x1024x8192", "125x264x8192"]
BASE = dict(cluster_m=1, cluster_n=1, decomposition="heuristic", epilogue="tma", raster="heuristic",
            reduction="deterministic", scheduler="persistent", splits=1, stages=0, swizzle=1, tile_k=64)
TILES = [dict(schedule="pingpong", tile_m=64, tile_n=128), dict(schedule="cooperative", tile_m=128, tile_n=128),
         dict(schedule="pingpong", tile_m=128, tile_n=128), dict(schedule="pingpong", tile_m=64, tile_n=64, tile_k=128),
         dict(schedule="cooperative", tile_m=128, tile_n=64, tile_k=128)]
SMS = 132
DIAGNOSTIC = "--diagnostic" in sys.argv     # call 2: the in-kernel genomes also without the cooperative attribute


def variants(tile: dict) -> list[dict]:
    launch = dict(pdl=1, reduce="grouped") if tile["schedule"] == "pingpong" else dict(reduce="grouped")
    return [dict(fixup="inkernel"), dict(reduce="serial"), launch]


def kernels(shape: str) -> list[Genome]:
    fam = family_registry().resolve("sm90_splitk")
    p = Problem.parse(shape)
    out = {}
    for tile in TILES:
        tiles = -(-p.m // tile["tile_m"]) * -(-p.n // tile["tile_n"])
        fits = [k for k in KSPLIT.choices if tiles * k <= SMS and p.k % (8 * k) == 0]
        if not fits:
            continue
        for extra in variants(tile):
            g = fam.space.validate(Genome.make("sm90_splitk", {**BASE, **tile, **extra, "ksplit": max(fits)}))
            if fam.space.is_valid(g, p):
                out[g.id] = g
                if extra.get("fixup") == "inkernel" and DIAGNOSTIC:
                    twin = not_cooperative(g)
                    out[twin.id] = twin
    return list(out.values())


def not_cooperative(g: Genome) -> Genome:
    """A diagnostic twin of an in-kernel genome (a code patch of its abi block): the same launch without the
    cooperative attribute. Not a kernel to keep: nothing then guarantees the grid is resident at once."""
    from genome.genome import Patch
    from templates.render import block_source
    abi = block_source(g, "abi")
    assert abi.count("config.numAttrs = 1;") == 1
    return Genome.make(g.family, g.param_dict, [Patch("abi", abi.replace("config.numAttrs = 1;", "config.numAttrs = 0;"),
                                                      note="diagnostic: not a cooperative launch")])


def recorded_best(shape: str) -> list[Genome]:
    data = json.loads(Path("docs/results/h200-public-2026-11-30-s21.json").read_text())
    for s in data["shapes"]:
        if s["problem"] == shape:
            return [Genome.from_dict(k["genome"]) for k in s["kernels"] if k["genome"]["id"] == s["best"]]
    return []


if __name__ == "__main__":
    hall = Path(sys.argv[1]) / "hall_of_fame"
    if "--shapes" in sys.argv:
        SHAPES = sys.argv[sys.argv.index("--shapes") + 1].split(",")
    hall.mkdir(parents=True, exist_ok=True)
    total = {}
    for shape in SHAPES:
        gs = kernels(shape) + recorded_best(shape)
        total.update((g.id, g) for g in gs)
        (hall / f"{shape}.json").write_text(json.dumps([g.to_dict() for g in gs], indent=1))
        print(shape, len(gs), "kernels")
    print(len(total), "genomes")
