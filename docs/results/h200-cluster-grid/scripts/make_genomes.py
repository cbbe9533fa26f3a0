"""The kernels of the cluster_grid experiment (session 40), written to ../kernels/{occupancy,cutlass,refs}/.

At each shape: the three sm90_cutlass persistent tiles (ping-pong or cooperative, clusters of 4 or 8 CTAs) that the
simulator (model revision 3) prices fastest with cluster_grid occupancy among those whose grid CUTLASS's estimate
runs in more rounds than the device's count (29 against 30 clusters of 4, 14 against 15 of 8), each with its twin
that leaves the count to CUTLASS (../kernels/cutlass); at the control shape 4096^3 the three fastest whose rounds are
the same either way. Also, at each shape, the fastest recorded sm90_cutlass kernel whose rounds CUTLASS's count
raises (`*-recorded-*`: its measured time is known) and its occupancy twin. ../kernels/refs: the best recorded kernel
at each shape (every gated measurement under docs/results, the median over benches of speedup against the best
vendor baseline). python make_genomes.py"""
import collections
import glob
import json
import math
from pathlib import Path

from evaluator.simulator import simulate_time_us
from genome import Genome, Problem
from templates import get_space

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "kernels"
RESULTS = HERE.parents[1]
SHAPES = ["1280x1280x1280", "5000x1000x3000", "3072x1280x1024", "640x3584x2048", "2048x8192x1000"]
CONTROL = "4096x4096x4096"
SPACE = get_space("sm90_cutlass")
ROUNDS = {4: (29, 30), 8: (14, 15)}     # clusters at once: CUTLASS's estimate, the H200's


def rounds(problem: Problem, g: Genome) -> tuple[int, int]:
    p = SPACE.params_of(g)
    cm, cn = p["cluster_m"], p["cluster_n"]
    tiles_m, tiles_n = math.ceil(problem.m / p["tile_m"]), math.ceil(problem.n / p["tile_n"])
    clusters = math.ceil(tiles_m / cm) * math.ceil(tiles_n / cn)    # swizzle 1: no more padding
    return tuple(math.ceil(clusters / c) for c in ROUNDS[cm * cn])


def candidates(problem: Problem, differ: bool) -> list[Genome]:
    out = []
    for schedule in ("pingpong", "cooperative"):
        for tile_m in (64, 128, 256):
            for tile_n in (64, 96, 128, 192, 256):
                for cm, cn in ((1, 4), (4, 1), (2, 2), (2, 4), (4, 2)):
                    params = dict(SPACE.default_params(), schedule=schedule, tile_m=tile_m, tile_n=tile_n, tile_k=64,
                                  cluster_m=cm, cluster_n=cn, cluster_grid="occupancy")
                    try:
                        g = SPACE.validate(Genome.make("sm90_cutlass", SPACE.canonical(params)), problem)
                    except ValueError:
                        continue
                    a, b = rounds(problem, g)
                    if (a > b) == differ:
                        out.append((simulate_time_us(g, problem), g.id, g))
    return [g for _, _, g in sorted(out, key=lambda t: t[:2])[:3]]


def recorded() -> "tuple[dict[str, dict], dict[str, dict[str, float]], dict[str, dict]]":
    """(best recorded genome a shape, median speedup a shape and genome id, genome by id) over every gated
    measurement under docs/results."""
    timed = collections.defaultdict(lambda: collections.defaultdict(list))
    genomes = {}
    for f in glob.glob(str(RESULTS / "**" / "*.json"), recursive=True):
        try:
            data = json.load(open(f))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("shapes"), list):
            continue
        for shape in data["shapes"]:
            if not isinstance(shape, dict):
                continue
            vendor = [v["median_us"] for v in shape.get("baselines", {}).get("device", {}).values()
                      if isinstance(v, dict) and v.get("median_us")]
            for k in shape.get("kernels", []) if vendor else ():
                us = ((k.get("measurement") or {}).get("device") or {}).get("median_us")
                if us and not k["genome"]["params"].get("gemm_pdl") and not k["genome"].get("patches"):
                    timed[shape["problem"]][k["genome"]["id"]].append(min(vendor) / us)
                    genomes[k["genome"]["id"]] = k["genome"]
    medians = {shape: {i: sorted(v)[len(v) // 2] for i, v in ks.items()} for shape, ks in timed.items()}
    best = {shape: genomes[max(ms, key=lambda i: (ms[i], i))] for shape, ms in medians.items()}
    return best, medians, genomes


def recorded_pair(problem: Problem, medians: dict[str, float], genomes: dict[str, dict]) -> "Genome | None":
    """The fastest recorded sm90_cutlass kernel at `problem` whose rounds CUTLASS's count raises, if any."""
    found = []
    for gid, ratio in medians.items():
        g = Genome.from_dict(genomes[gid])
        if g.family != "sm90_cutlass" or g.patches:
            continue
        p = SPACE.params_of(g)
        if p["cluster_m"] * p["cluster_n"] in ROUNDS and p["schedule"] != "ws":
            a, b = rounds(problem, g)
            if a > b:
                found.append((ratio, gid, g))
    return max(found, key=lambda t: t[:2])[2] if found else None


def main() -> None:
    for sub in ("occupancy", "cutlass", "refs"):
        (OUT / sub).mkdir(parents=True, exist_ok=True)
    for shape in SHAPES + [CONTROL]:
        problem = Problem.parse(shape)
        for g in candidates(problem, differ=shape != CONTROL):
            twin = SPACE.validate(g.with_params(cluster_grid="cutlass"))
            g.save(OUT / "occupancy" / f"{shape}-{g.id[:8]}.json")
            twin.save(OUT / "cutlass" / f"{shape}-{twin.id[:8]}.json")
            print(shape, g.id[:8], twin.id[:8], rounds(problem, g), SPACE.params_of(g)["schedule"],
                  SPACE.params_of(g)["tile_m"], SPACE.params_of(g)["tile_n"], SPACE.params_of(g)["cluster_m"],
                  SPACE.params_of(g)["cluster_n"], round(simulate_time_us(g, problem), 1),
                  round(simulate_time_us(twin, problem), 1))
    best, medians, genomes = recorded()
    for shape in SHAPES + [CONTROL]:
        if shape in best:
            g = Genome.from_dict(best[shape])
            g.save(OUT / "refs" / f"{shape}-{g.id[:8]}.json")
            print("ref", shape, g.id[:8], g.family)
        # the fastest recorded kernel whose rounds CUTLASS's count raises, and its occupancy twin
        twin = recorded_pair(Problem.parse(shape), medians.get(shape, {}), genomes)
        if twin is not None:
            asked = SPACE.validate(twin.with_params(cluster_grid="occupancy"))
            twin.save(OUT / "cutlass" / f"{shape}-recorded-{twin.id[:8]}.json")
            asked.save(OUT / "occupancy" / f"{shape}-recorded-{asked.id[:8]}.json")
            print("recorded", shape, twin.id[:8], round(medians[shape][twin.id], 3), asked.id[:8])


if __name__ == "__main__":
    main()
